// The Hopper intrinsics through the IR: the verifier's target and collective rules, and the
// code generator's inline PTX, compiled by NVRTC (for sm_90a, which the builder picks for a
// kernel that uses them).
#include <catch2/catch.hpp>

#include <string>

#include <fmt/format.h>

#include "src/codegen/codegen_cuda.h"
#include "src/ir/hopper_intrinsics.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"
#include "src/ir/tma_intrinsics.h"
#include "src/ir/simplify.h"
#include "src/ir/verify.h"
#include "src/runtime/nvrtc_builder.h"

using namespace cutune;
using namespace cutune::ir;

namespace {

bool has(const std::string& code, const std::string& what) {
  return code.find(what) != std::string::npos;
}

// A warpgroup kernel calling every kind of Hopper intrinsic; `threads` threads, the wgmma
// under `tx < guard` when guard > 0.
Kernel hopper_kernel(int threads = 128, int guard = 0) {
  Buffer out = Buffer::make("Out", Type::f32(), MemoryScope::global, 256 * 128);
  Buffer sa = Buffer::make("SA", Type::f16(), MemoryScope::shared, 64 * 64);
  Buffer sb = Buffer::make("SB", Type::f16(), MemoryScope::shared, 256 * 64);
  Buffer acc = Buffer::make("Acc", Type::f32(), MemoryScope::local, 128);
  Buffer frag = Buffer::make("AF", Type::u32(), MemoryScope::local, 4);
  Expr tx = Var::make(Type::i32(), "tx");
  std::vector<Stmt> s;
  s.push_back(setmaxnreg(false, 40));
  s.push_back(setmaxnreg(true, 232));
  s.push_back(For::make("i", 0, 4, ForKind::unrolled,
                        Store::make(frag, Var::make(Type::i32(), "i"),
                                    pack_b16x2(Load::make(sa, tx), Load::make(sa, tx + 1)))));
  s.push_back(fence_proxy_async());
  s.push_back(Sync::make());
  s.push_back(For::make("i", 0, 128, ForKind::unrolled,
                        wgmma_fence_operand(address_of(acc, Var::make(Type::i32(), "i")))));
  s.push_back(wgmma_fence());
  Expr da = wgmma_descriptor(address_of(sa, 0), 16, 1024, WgmmaSwizzle::b128);
  Expr db = wgmma_descriptor(address_of(sb, 0), 4096, 512, WgmmaSwizzle::b64);
  std::vector<Stmt> mmas;
  for (int n : {8, 128, 256}) {
    for (DType t : {DType::Float16, DType::BFloat16}) {
      mmas.push_back(wgmma_ss({n, t, n == 128, n != 8}, address_of(acc, 0), da, db, 1));
      mmas.push_back(
          wgmma_rs({n, t, false, n == 256}, address_of(acc, 0), address_of(frag, 0), db, 0));
    }
  }
  Stmt mma_block = Block::make(mmas);
  if (guard > 0) mma_block = IfThenElse::make(tx < guard, mma_block);
  s.push_back(mma_block);
  s.push_back(wgmma_commit_group());
  for (int n = 7; n >= 0; --n) s.push_back(wgmma_wait_group(n));
  s.push_back(For::make("i", 0, 128, ForKind::unrolled,
                        Store::make(out, tx * 128 + Var::make(Type::i32(), "i"),
                                    Load::make(acc, Var::make(Type::i32(), "i")))));
  Stmt body = Block::make(s);
  body = Allocate::make(frag, Allocate::make(acc, body));
  body = Allocate::make(sa, Allocate::make(sb, body));
  body = For::make("tx", 0, threads, ForKind::thread_x, body);
  Kernel k;
  k.name = "hopper_intrinsics";
  k.buffers = {out};
  k.body = body;
  return k;
}

}  // namespace

TEST_CASE("the IR builders name each wgmma shape and refuse the ones PTX lacks",
          "[wgmma][codegen]") {
  CHECK(wgmma_name({64, DType::Float16, false, true}, false) ==
        "cutune_wgmma_m64n64k16_f32_f16_ss_nt");
  CHECK(wgmma_name({256, DType::BFloat16, false, false}, true) ==
        "cutune_wgmma_m64n256k16_f32_bf16_rs_n");
  Buffer acc = Buffer::make("Acc", Type::f32(), MemoryScope::local, 128);
  Buffer frag = Buffer::make("AF", Type::u32(), MemoryScope::local, 4);
  Expr d = Expr(int64_t{0});
  CHECK_THROWS_AS(wgmma_ss({12, DType::Float16}, address_of(acc, 0), d, d, 1), IRError);
  CHECK_THROWS_AS(wgmma_ss({264, DType::Float16}, address_of(acc, 0), d, d, 1), IRError);
  CHECK_THROWS_AS(wgmma_ss({64, DType::Float32}, address_of(acc, 0), d, d, 1), IRError);
  CHECK_THROWS_AS(
      wgmma_rs({64, DType::Float16, true}, address_of(acc, 0), address_of(frag, 0), d, 1), IRError);
  CHECK_THROWS_AS(wgmma_wait_group(8), IRError);
  CHECK_THROWS_AS(setmaxnreg(true, 20), IRError);
  CHECK_THROWS_AS(setmaxnreg(true, 100), IRError);
  // 32 N x 2 types x (4 ss + 2 rs) shapes, 8 waits, 30 x 2 setmaxnreg, and 5 others.
  CHECK(hopper_intrinsic_names().size() == 384 + 8 + 60 + 4);  // fence.proxy.async is TMA's
}

TEST_CASE("the verifier keeps wgmma to sm_90 targets and whole warpgroups", "[wgmma][verify]") {
  Kernel ok = simplify(hopper_kernel());
  CHECK(verify(ok, TargetLimits{}).ok());
  TargetLimits sm90a;
  sm90a.arch = "sm_90a";
  CHECK(verify(ok, sm90a).ok());
  for (const char* arch : {"sm_80", "sm_100"}) {
    TargetLimits other;
    other.arch = arch;
    VerifyResult v = verify(ok, other);
    // sm_80 also lacks the kernel's fence.proxy.async (sm_90 and later): a second error.
    REQUIRE(v.errors.size() == (std::string(arch) == "sm_80" ? 2u : 1u));
    CHECK(has(v.errors[0], "needs sm_90a"));
    CHECK(has(v.errors[0], arch));
  }
  VerifyResult partial = verify(simplify(hopper_kernel(96)), TargetLimits{});
  REQUIRE_FALSE(partial.ok());
  CHECK(has(partial.errors.at(0), "multiple of 128 threads"));
  VerifyResult guarded = verify(simplify(hopper_kernel(128, 64)), TargetLimits{});
  REQUIRE_FALSE(guarded.ok());
  CHECK(has(guarded.errors.at(0), "warpgroup-collective"));
}

TEST_CASE("every Hopper intrinsic kind compiles for sm_90a, chosen per kernel",
          "[wgmma][codegen][nvrtc]") {
  Kernel k = simplify(hopper_kernel());
  VerifyResult v = verify(k, TargetLimits{});
  REQUIRE(v.ok());
  CudaSource src = generate_cuda(k, v.launch);
  INFO(src.code);
  CHECK(src.arch_specific);
  CHECK(has(src.code, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
  CHECK(has(src.code, "setmaxnreg.dec.sync.aligned.u32 40;"));
  CHECK(has(src.code, "cutune_wgmma_desc_encode("));
  CHECK(has(src.code, "__align__(1024)"));
  std::string body = src.code.substr(src.code.find("extern \"C\""));
  CHECK_FALSE(has(body, "asm"));
  NvrtcBuilder builder(BuildOptions{}, 1);
  CompileResult r = builder.compile(src);
  INFO("NVRTC log:\n" << r.log);
  CHECK(r.ok());
  CHECK(r.arch == "sm_90a");
  // A kernel without them keeps the builder's architecture.
  CudaSource plain = src;
  plain.arch_specific = false;
  CHECK(builder.cache_key(plain) != builder.cache_key(src));
}
