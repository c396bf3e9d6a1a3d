// Kernels built from the IR with the mbarrier and TMA intrinsics (src/ir/tma_intrinsics.h),
// generated as CUDA C, run in the CPU emulator against host references, and compiled with NVRTC
// for sm_90a: a TMA tile load through each swizzle, the deadlock and expect_tx reports, a
// three-stage producer/consumer ring, and a named barrier of part of the block.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "src/ir/simplify.h"
#include "src/ir/verify.h"
#include "src/runtime/nvrtc_builder.h"
#include "tests/emulator/tma_test_kernels.h"

using namespace cutune;
using namespace cutune::ir;
using cutune::emu::Emulator;
using cutune::emu::EmulatorOptions;
using cutune::emu::EmuResult;
using cutune::emu::EmuStatus;
using cutune::emu::HostBuffer;
using namespace cutune::test::tma;

TEST_CASE("the CUDA text declares the tensor map parameter and aligns TMA destinations",
          "[tma][codegen]") {
  CudaSource src = generate(TileKernel{37, 29, 40, TmaSwizzle::b128}.build());
  INFO(src.code);
  CHECK_THAT(src.code, Catch::Contains("const __grid_constant__ cutune_tensor_map in_map)"));
  CHECK_THAT(src.code, Catch::Contains("__shared__ __align__(1024) float tile[256];"));
  CHECK_THAT(src.code, Catch::Contains("struct __align__(64) cutune_tensor_map {"));
  CHECK_THAT(src.code, Catch::Contains("cutune_tma_load_2d(&tile[0], in_map, &bar[0], "));
  CHECK_THAT(src.code, Catch::Contains("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
                                       "complete_tx::bytes"));
  CHECK_THAT(src.code, Catch::Contains("mbarrier.try_wait.parity.shared::cta.b64"));
  CHECK_THAT(src.code, !Catch::Contains("#include"));
  REQUIRE(src.params.size() == 4);
  REQUIRE(src.params[3].tensor_map.has_value());
  CHECK(src.params[3].tensor_map->buffer == "In");
  CHECK_FALSE(src.params[3].is_pointer);
}

TEST_CASE("the verifier keeps TMA and mbarrier kernels to sm_90 and later", "[tma][verify]") {
  const Kernel k = simplify(TileKernel{37, 29, 40, TmaSwizzle::b128}.build());
  for (const char* arch : {"sm_90", "sm_90a", "sm_100"}) {
    TargetLimits limits;
    limits.arch = arch;
    INFO(arch);
    CHECK(verify(k, limits).ok());
  }
  TargetLimits ampere;
  ampere.arch = "sm_80";
  VerifyResult v = verify(k, ampere);
  REQUIRE(v.errors.size() == 1);
  CHECK_THAT(v.errors[0], Catch::Contains("needs sm_90 or later"));
  CHECK_THAT(v.errors[0], Catch::Contains("sm_80"));
}

TEST_CASE("TMA and mbarrier kernels compile with NVRTC for sm_90a", "[tma][nvrtc]") {
  TileKernel elected{37, 29, 40, TmaSwizzle::b128};
  elected.elect_issuer = true;
  std::vector<CudaSource> sources = {
      generate(TileKernel{37, 29, 40, TmaSwizzle::b128}.build()), generate(elected.build()),
      generate(TileKernel{64, 16, 64, TmaSwizzle::none}.build()), generate(RingKernel{}.build())};
  // test_wait, expect_tx and the fence, which the kernels above do not use.
  Buffer bar = Buffer::make("bar", Type::i64(), MemoryScope::shared, 1);
  Buffer out = Buffer::make("Out", Type::i32(), MemoryScope::global, 1);
  Expr b0 = address_of(bar, 0);
  Kernel extra;
  extra.name = "mbarrier_extra";
  extra.buffers = {out};
  extra.body = bind(
      "tx", 32, ForKind::thread_x,
      Allocate::make(
          bar,
          Block::make({IfThenElse::make(eq(var("tx"), 0), mbarrier_init(b0, 32)), Sync::make(),
                       fence_proxy_async(), mbarrier_expect_tx(b0, 0), mbarrier_arrive(b0),
                       IfThenElse::make(mbarrier_test_wait_parity(b0, 0), Store::make(out, 0, 1)),
                       mbarrier_wait_parity(b0, 0), Sync::make(),
                       IfThenElse::make(eq(var("tx"), 0), mbarrier_inval(b0))})));
  sources.push_back(generate(extra));
  BuildOptions options;
  options.arch = "sm_90a";
  NvrtcBuilder builder(options, 2);
  std::vector<CompileResult> results = builder.compile_batch(sources);
  for (size_t n = 0; n < results.size(); ++n) {
    INFO("kernel " << sources[n].kernel_name << ":\n"
                   << sources[n].code << "log:\n"
                   << results[n].log);
    CHECK(results[n].ok());
  }
}

TEST_CASE("a TMA tile load honours box, pitch, zero fill and each swizzle in the emulator",
          "[tma][emulator]") {
  // 37 x 29 floats with a 40-float pitch: 2 x 4 boxes, the last column and row of boxes
  // partly outside the tensor.
  for (TmaSwizzle swizzle : {TmaSwizzle::none, TmaSwizzle::b128}) {
    TileKernel k{37, 29, 40, swizzle};
    std::vector<float> result;
    EmuResult r = k.run(result);
    INFO("swizzle " << swizzle_name(swizzle) << ": " << r.message);
    REQUIRE(r.status == EmuStatus::ok);
    CHECK(result == k.expected());
  }
}

TEST_CASE("reading a TMA tile through the wrong swizzle gives wrong data", "[tma][emulator]") {
  TileKernel k{37, 29, 40, TmaSwizzle::b128};
  TileKernel reader = k;
  reader.swizzle = TmaSwizzle::none;  // the kernel's map swizzles, its reads do not
  CudaSource src = generate(k.build());
  std::vector<float> in = k.input();
  std::vector<int32_t> p = reader.perm();
  std::vector<HostBuffer> buffers = {HostBuffer::zeros(Type::f32(), k.out_elements()),
                                     HostBuffer::from_floats(in), HostBuffer::from_ints(p)};
  EmulatorOptions options;
  options.host_threads = 1;
  Emulator emu(options);
  EmuResult r = emu.run(src, buffers);
  REQUIRE(r.status == EmuStatus::ok);
  CHECK(buffers[0].to_floats() != k.expected());
}

TEST_CASE("a block barrier does not wait for a TMA copy", "[tma][emulator]") {
  // The tile is read after a __syncthreads instead of a wait on the barrier's phase. A GPU may
  // land the copy after the barrier, and so does the emulator: the reads see the shared memory
  // from before it (poisoned), and the sanitizer reports the race with the copy's issuer.
  TileKernel k{37, 29, 40, TmaSwizzle::none};
  k.sync_instead_of_wait = true;
  std::vector<float> result;
  EmuResult r = k.run(result);
  INFO(to_string(r.status) << ": " << r.message);
  CHECK_FALSE((r.status == EmuStatus::ok && result == k.expected()));
  CHECK(r.status == EmuStatus::race);
  CHECK_THAT(r.message, Catch::Contains("written by the TMA load by thread (0,0,0)") &&
                            Catch::Contains("with no wait on its mbarrier between them"));
}

TEST_CASE("a lane elected by elect.sync issues the copies, the emulator elects the last lane",
          "[tma][emulator]") {
  TileKernel k{37, 29, 40, TmaSwizzle::b128};
  k.elect_issuer = true;
  std::vector<float> result;
  EmuResult r = k.run(result);
  INFO(to_string(r.status) << ": " << r.message);
  REQUIRE(r.status == EmuStatus::ok);
  CHECK(result == k.expected());
  // Which lane: the race of the planted bug names the issuer, lane 31 of warp 1, where a
  // GPU tends to elect lane 0 (a kernel that counts on either is wrong).
  k.sync_instead_of_wait = true;
  r = k.run(result);
  INFO(to_string(r.status) << ": " << r.message);
  CHECK(r.status == EmuStatus::race);
  CHECK_THAT(r.message, Catch::Contains("written by the TMA load by thread (63,0,0)"));
}

TEST_CASE("elect.sync reached by part of a warp is reported, by the verifier and the emulator",
          "[tma][emulator][verify]") {
  TileKernel k{37, 29, 40, TmaSwizzle::none};
  k.partial_elect = true;
  // `tx == 0 && elect_one()` is one condition, which the verifier does not split; nested,
  // it is refused.
  Expr tx = var("tx");
  Kernel nested = k.build();
  nested.body =
      bind("tx", 32, ForKind::thread_x,
           IfThenElse::make(eq(tx, 0), IfThenElse::make(elect_one(), fence_proxy_async())));
  VerifyResult v = verify(nested, TargetLimits{});
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.errors.front(), Catch::Contains("warp-collective cutune_elect_one is under a "
                                               "thread-dependent condition"));
  // The emulator: thread 0 waits at the elect for lanes that never come; nothing issues the
  // copies, and the block ends as a deadlock.
  std::vector<float> result;
  EmuResult r = k.run(result);
  INFO(to_string(r.status) << ": " << r.message);
  CHECK(r.status == EmuStatus::barrier_divergence);
}

TEST_CASE("an expect_tx larger than the copies is reported as an mbarrier deadlock",
          "[tma][emulator]") {
  TileKernel k{37, 29, 40, TmaSwizzle::none};
  k.expect_bytes = kBoxBytes + 16;
  std::vector<float> result;
  EmuResult r = k.run(result);
  INFO(r.message);
  CHECK(r.status == EmuStatus::barrier_divergence);
  CHECK_THAT(r.message, Catch::Contains("mbarrier deadlock in block"));
  CHECK_THAT(r.message, Catch::Contains("tx-count 16 bytes"));
}

TEST_CASE("an expect_tx smaller than the copies is reported", "[tma][emulator]") {
  TileKernel k{37, 29, 40, TmaSwizzle::none};
  k.copies = 2;  // two boxes against one barrier, which expects one box's bytes
  std::vector<float> result;
  EmuResult r = k.run(result);
  INFO(r.message);
  CHECK(r.status == EmuStatus::crashed);
  CHECK_THAT(r.message, Catch::Contains("expect_tx count is too small"));
}

TEST_CASE("a three-stage TMA ring with mbarrier phases copies every tile", "[tma][emulator]") {
  std::vector<float> result, expected;
  EmuResult r = RingKernel{}.run(result, expected);
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::ok);
  CHECK(result == expected);
}

TEST_CASE("a ring that waits with the wrong phase parity is caught", "[tma][emulator]") {
  RingKernel k;
  k.wrong_parity = true;
  std::vector<float> result, expected;
  EmuResult r = k.run(result, expected);
  INFO(r.message);
  CHECK_FALSE((r.status == EmuStatus::ok && result == expected));
}

namespace {

// 128 threads: the first two warps write shared S, meet at bar.sync 1, `count` and read each
// other's values; the last two write their own index. `count` 64 is right; 96 waits for
// threads that never come.
EmuResult run_named_barrier(int count, std::vector<int32_t>& out) {
  Buffer s = Buffer::make("S", Type::i32(), MemoryScope::shared, 64);
  Buffer o = Buffer::make("Out", Type::i32(), MemoryScope::global, 128);
  Expr tx = var("tx");
  Kernel k;
  k.name = "named_barrier";
  k.buffers = {o};
  k.body = bind(
      "tx", 128, ForKind::thread_x,
      Allocate::make(s, IfThenElse::make(tx < 64,
                                         Block::make({Store::make(s, tx, tx * 3),
                                                      named_barrier_sync(i32(1), count),
                                                      Store::make(o, tx, Load::make(s, 63 - tx))}),
                                         Store::make(o, tx, tx))));
  std::vector<HostBuffer> buffers = {HostBuffer::zeros(Type::i32(), 128)};
  EmulatorOptions options;
  options.host_threads = 1;
  options.sanitize_all_blocks = true;
  Emulator emu(options);
  EmuResult r = emu.run(generate(k), buffers);
  out = buffers[0].to_ints();
  return r;
}

}  // namespace

TEST_CASE("a named barrier meets the threads of its count, the others go on", "[tma][emulator]") {
  std::vector<int32_t> out;
  EmuResult r = run_named_barrier(64, out);
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::ok);
  for (int t = 0; t < 128; ++t) CHECK(out[size_t(t)] == (t < 64 ? (63 - t) * 3 : t));
  r = run_named_barrier(96, out);
  CHECK(r.status == EmuStatus::barrier_divergence);
  CHECK_THAT(r.message, Catch::Contains("named barrier deadlock") &&
                            Catch::Contains("bar.sync 1, 96") &&
                            Catch::Contains("where only 64 threads wait"));
}
