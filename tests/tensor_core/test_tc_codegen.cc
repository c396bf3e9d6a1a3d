// The code generator defines the 16-bit storage types and the intrinsics a kernel uses, and
// nothing else: a golden-style check on generated sources, and an NVRTC compile of a kernel
// that calls every intrinsic (the inline PTX and its operand constraints are valid for sm_90).

#include <catch2/catch.hpp>

#include "src/codegen/codegen_cuda.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"
#include "src/ir/simplify.h"
#include "src/runtime/nvrtc_builder.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;
using namespace cutune::ir;

namespace {

bool has(const std::string& code, const std::string& what) {
  return code.find(what) != std::string::npos;
}

// Every intrinsic, called once from one warp, so that each definition is emitted.
Kernel all_intrinsics_kernel() {
  Buffer in = Buffer::make("In", Type::f16(), MemoryScope::global, 512, true);
  Buffer out = Buffer::make("Out", Type::f32(), MemoryScope::global, 64);
  Buffer out16 = Buffer::make("Out16", Type::bf16(), MemoryScope::global, 64);
  Buffer outh = Buffer::make("OutH", Type::f16(), MemoryScope::global, 64);
  Buffer sh = Buffer::make("S", Type::f16(), MemoryScope::shared, 512);
  Buffer frag = Buffer::make("F", Type::u32(), MemoryScope::local, 4);
  Buffer acc = Buffer::make("D", Type::f32(), MemoryScope::local, 4);
  Expr tx = int_var("tx");
  std::vector<Stmt> s;
  s.push_back(cp_async(16, address_of(sh, tx * 8), address_of(in, tx * 8), 16));
  s.push_back(cp_async(8, address_of(sh, 256 + tx * 4), address_of(in, tx * 4), 8));
  s.push_back(cp_async(4, address_of(sh, 384 + tx * 2), address_of(in, tx * 2), 0));
  s.push_back(cp_async_commit());
  for (int n = 4; n >= 0; --n) s.push_back(cp_async_wait(n));
  s.push_back(Sync::make());
  for (bool trans : {false, true}) {
    for (int count : {1, 2, 4}) {
      s.push_back(ldmatrix(count, trans, address_of(frag, 0), address_of(sh, tx % 16 * 16)));
    }
  }
  s.push_back(For::make("i", 0, 4, ForKind::unrolled,
                        Store::make(acc, int_var("i"), storage_to_f32(Load::make(sh, tx)))));
  s.push_back(mma_m16n8k16(DType::Float16, address_of(acc, 0), address_of(frag, 0),
                           address_of(frag, 2), address_of(acc, 0)));
  s.push_back(mma_m16n8k16(DType::BFloat16, address_of(acc, 0), address_of(frag, 0),
                           address_of(frag, 2), address_of(acc, 0)));
  s.push_back(Store::make(frag, 0, pack_b16x2(Load::make(sh, tx), Load::make(sh, tx + 1))));
  Expr bf = f32_to_storage(DType::BFloat16, Load::make(acc, 1));
  s.push_back(Store::make(out16, tx, f32_to_storage(DType::BFloat16, storage_to_f32(bf))));
  s.push_back(Store::make(out16, 32 + tx / 2 * 2,
                          pack_x2(DType::BFloat16, Load::make(acc, 2), Load::make(acc, 3))));
  Expr h = f32_to_storage(DType::Float16, Load::make(acc, 0));
  s.push_back(Store::make(out, tx, storage_to_f32(h)));
  s.push_back(Store::make(outh, tx / 2 * 2,
                          pack_x2(DType::Float16, Load::make(acc, 0), Load::make(acc, 1))));
  s.push_back(atomic_add(out, 32 + tx, Load::make(acc, 2)));
  s.push_back(Store::make(out, tx, cast(Type::f32(), warp_uniform(tx / 32))));
  s.push_back(Store::make(out, 33, cast(Type::f32(), grid_blocks())));
  Stmt body = Block::make(s);
  body = Allocate::make(acc, body);
  body = Allocate::make(frag, body);
  body = Allocate::make(sh, body);
  body = For::make("tx", 0, 32, ForKind::thread_x, body);
  Kernel k;
  k.name = "all_intrinsics";
  k.buffers = {out, out16, outh, in};
  k.body = body;
  return k;
}

}  // namespace

TEST_CASE("fp32 kernels define no storage types and no intrinsics", "[tensor_core][codegen]") {
  auto tmpl = make_template("gemm", {256, 256, 256}, "gemm_nn");
  std::string code = test::tc_source(*tmpl, tmpl->reference_configs().at(0)).code;
  CHECK_FALSE(has(code, "cutune_half"));
  CHECK_FALSE(has(code, "__CUDA_ARCH__"));
  CHECK_FALSE(has(code, "asm"));
  CHECK_FALSE(has(code, "cutune_mma"));
}

TEST_CASE("a scalar tensor-core GEMM defines mma and the pair packer only",
          "[tensor_core][codegen]") {
  auto tmpl = make_template("gemm_fp16", {67, 45, 33}, "gemm_fp16_nt");
  std::string code = test::tc_source(*tmpl, test::tc_config(*tmpl, test::kTcScalar)).code;
  INFO(code);
  CHECK(has(code, "typedef unsigned short cutune_half;"));
  CHECK(has(code, "#if defined(__CUDA_ARCH__)"));
  CHECK(has(code, "__device__ __forceinline__ void cutune_mma_m16n8k16_f16("));
  CHECK(has(code, "__device__ __forceinline__ unsigned cutune_pack_b16x2("));
  CHECK_FALSE(has(code, "cutune_mma_m16n8k16_bf16"));
  CHECK_FALSE(has(code, "ldmatrix"));
  CHECK_FALSE(has(code, "cp_async"));
  CHECK(has(code, "const cutune_half* __restrict__ A"));
  CHECK(has(code, "float* __restrict__ C"));
  // The kernel body calls intrinsics; the only asm is in their definitions above #endif.
  std::string body = code.substr(code.find("extern \"C\""));
  CHECK_FALSE(has(body, "asm"));
  CHECK(has(body, "cutune_mma_m16n8k16_f16(&C_frag["));
}

TEST_CASE("a full tensor-core GEMM defines exactly the intrinsics it calls",
          "[tensor_core][codegen]") {
  auto tmpl = make_template("gemm_bf16", {128, 72, 40}, "gemm_bf16_nn_out16");
  std::string code = test::tc_source(*tmpl, test::tc_config(*tmpl, test::kTcFull)).code;
  INFO(code);
  std::string body = code.substr(code.find("extern \"C\""));
  for (const std::string& name : intrinsic_names()) {
    bool called = has(body, name + "(");
    bool defined = has(code, " " + name + "(");
    INFO(name);
    CHECK(called == defined);
  }
  CHECK(has(body, "cutune_ldmatrix_x4("));
  CHECK(has(body, "cutune_ldmatrix_x4_trans("));  // layout nn: B by transposing ldmatrix
  CHECK(has(body, "cutune_cp_async_16("));
  CHECK(has(body, "cutune_cp_async_wait_1();"));  // 3 stages: 1 slice may stay in flight
  CHECK(has(body, "cutune_pack_bf16x2("));
  CHECK(has(code, "cutune_bf16* __restrict__ C"));
  CHECK_FALSE(has(body, "asm"));
}

TEST_CASE("every intrinsic definition compiles for sm_90", "[tensor_core][codegen][nvrtc]") {
  Kernel k = simplify(all_intrinsics_kernel());
  VerifyResult v = verify(k, TargetLimits{});
  for (const std::string& e : v.errors) INFO(e);
  REQUIRE(v.ok());
  CudaSource src = generate_cuda(k, v.launch);
  for (const std::string& name : intrinsic_names()) {
    INFO(name);
    CHECK(src.code.find(" " + name + "(") != std::string::npos);
  }
  NvrtcBuilder builder(BuildOptions{}, 1);
  std::vector<CompileResult> r = builder.compile_batch({src});
  INFO(src.code << "\nNVRTC log:\n" << r.at(0).log);
  CHECK(r.at(0).ok());
}

TEST_CASE("the verifier rejects a warp-collective intrinsic under a thread-dependent branch",
          "[tensor_core][verify]") {
  Buffer sh = Buffer::make("S", Type::f16(), MemoryScope::shared, 256);
  Buffer frag = Buffer::make("F", Type::u32(), MemoryScope::local, 4);
  Buffer out = Buffer::make("Out", Type::f32(), MemoryScope::global, 32);
  Expr tx = int_var("tx");
  Stmt body = Block::make(
      {IfThenElse::make(tx < 16, ldmatrix(4, false, address_of(frag, 0), address_of(sh, tx * 8))),
       Store::make(out, tx, f32(0.0))});
  body = Allocate::make(frag, body);
  body = Allocate::make(sh, body);
  Kernel k;
  k.name = "divergent";
  k.buffers = {out};
  k.body = For::make("tx", 0, 32, ForKind::thread_x, body);
  VerifyResult v = verify(k, TargetLimits{});
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.errors.front(), Catch::Contains("warp-collective"));
}

TEST_CASE("storage-only types take no arithmetic and no casts", "[tensor_core][ir]") {
  Buffer h = Buffer::make("H", Type::f16(), MemoryScope::global, 4, true);
  Expr x = Load::make(h, 0);
  CHECK_THROWS_AS(x + x, IRError);
  CHECK_THROWS_AS(cast(Type::f32(), x), IRError);
  CHECK_THROWS_AS(FloatImm::make(Type::f16(), 1.0), IRError);
  CHECK_THROWS_AS(Call::make(Type::f16(), kAddressOf, {x, x}), IRError);
  CHECK(cuda_type_name(Type::f16()) == "cutune_half");
  CHECK(cuda_type_name(Type::bf16()) == "cutune_bf16");
  CHECK(cuda_type_name(Type::u32()) == "unsigned");
  CHECK(cuda_type_name(Type::f16().with_lanes(2)) == "unsigned");
}
