#include <catch2/catch.hpp>

#include <cstdlib>

#include "src/emulator/emulator.h"
#include "src/emulator/sanitizer.h"
#include "tests/emulator/emulator_fixtures.h"

namespace cutune::emu {
namespace {

using Catch::Matchers::Contains;
using testing::buffer_param;
using testing::int_param;
using testing::make_source;

// C[i] = A[i] + B[i] with the tail guard `i <= n` instead of `i < n`.
CudaSource off_by_one_source(int n) {
  return make_source(
      "add_off_by_one",
      R"(extern "C" __global__ void add_off_by_one(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) {
    C[i] = 1.0f;
  }
}
)",
      {buffer_param("C", n), buffer_param("A", n, true), buffer_param("B", n, true),
       int_param("n")},
      Dim3{static_cast<uint32_t>(n / 64 + 1), 1, 1}, Dim3{64, 1, 1});
}

EmuResult run_off_by_one(int n) {
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), n),
                                  HostBuffer::zeros(ir::Type::f32(), n),
                                  HostBuffer::zeros(ir::Type::f32(), n)};
  Emulator emu;
  return emu.run(off_by_one_source(n), bufs, {ScalarArg::i32(n)});
}

TEST_CASE("an off-by-one tail guard is an out-of-bounds write, caught by the guard page",
          "[emulator]") {
  EmuResult r = run_off_by_one(1000);  // 4000 bytes: the data ends flush with the guard page
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::out_of_bounds);
  REQUIRE_THAT(r.message, Contains("add_off_by_one") && Contains("write to C[1000]") &&
                              Contains("C has 1000 elements") && Contains("thread (40,0,0)"));
}

TEST_CASE("an off-by-one write into the alignment slack is caught by the canary", "[emulator]") {
  EmuResult r = run_off_by_one(1001);  // 4004 bytes, padded to 4016
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::out_of_bounds);
  REQUIRE_THAT(r.message, Contains("add_off_by_one") && Contains("C[1001]"));
}

TEST_CASE("an out-of-bounds read is reported with buffer and index", "[emulator]") {
  const int n = 256;
  CudaSource src = make_source(
      "shift_left",
      R"(extern "C" __global__ void shift_left(float* __restrict__ out, const float* __restrict__ in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = in[i + 1];
  }
}
)",
      {buffer_param("out", n), buffer_param("in", n, true), int_param("n")}, Dim3{2, 1, 1},
      Dim3{128, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), n),
                                  HostBuffer::zeros(ir::Type::f32(), n)};
  Emulator emu;
  EmuResult r = emu.run(src, bufs, {ScalarArg::i32(n)});
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::out_of_bounds);
  REQUIRE_THAT(r.message, Contains("shift_left: out-of-bounds read of in[256]") &&
                              Contains("block (1,0,0) thread (127,0,0)"));
  // A failed run leaves the outputs as they were.
  REQUIRE(bufs[0].to_floats() == std::vector<float>(n, 0.0f));
}

TEST_CASE("a write through a cast-away const is reported", "[emulator]") {
  CudaSource src = make_source(
      "write_input",
      R"(extern "C" __global__ void write_input(float* __restrict__ out, const float* __restrict__ in) {
  const_cast<float*>(in)[threadIdx.x] = 0.0f;
  out[threadIdx.x] = 1.0f;
}
)",
      {buffer_param("out", 32), buffer_param("in", 32, true)}, Dim3{1, 1, 1}, Dim3{32, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 32),
                                  HostBuffer::zeros(ir::Type::f32(), 32)};
  Emulator emu;
  EmuResult r = emu.run(src, bufs);
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::out_of_bounds);
  REQUIRE_THAT(r.message, Contains("read-only buffer in at element 0"));
}

TEST_CASE("threads that exit while others wait at __syncthreads diverge", "[emulator]") {
  CudaSource src =
      make_source("early_exit", R"(extern "C" __global__ void early_exit(float* __restrict__ out) {
  if (threadIdx.x >= 32) {
    return;
  }
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}
)",
                  {buffer_param("out", 64)}, Dim3{1, 1, 1}, Dim3{64, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 64)};
  Emulator emu;
  EmuResult r = emu.run(src, bufs);
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::barrier_divergence);
  REQUIRE_THAT(r.message, Contains("early_exit") && Contains("line 5") && Contains("has exited"));
}

TEST_CASE("threads waiting at different __syncthreads diverge", "[emulator]") {
  CudaSource src = make_source("two_barriers",
                               R"(extern "C" __global__ void two_barriers(float* __restrict__ out) {
  if (threadIdx.x % 2 == 0) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1.0f;
}
)",
                               {buffer_param("out", 64)}, Dim3{1, 1, 1}, Dim3{64, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 64)};
  Emulator emu;
  EmuResult r = emu.run(src, bufs);
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::barrier_divergence);
  REQUIRE_THAT(r.message, Contains("line 3") && Contains("line 5"));
}

TEST_CASE("a kernel that never ends times out", "[emulator]") {
  CudaSource src = make_source("spin", R"(extern "C" __global__ void spin(float* __restrict__ out) {
  volatile int forever = 1;
  while (forever) {
  }
  out[threadIdx.x] = 1.0f;
}
)",
                               {buffer_param("out", 32)}, Dim3{1, 1, 1}, Dim3{32, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 32)};
  EmulatorOptions options;
  options.timeout_seconds = 0.2;
  Emulator emu(options);
  EmuResult r = emu.run(src, bufs);
  REQUIRE(r.status == EmuStatus::timeout);
  REQUIRE_THAT(r.message, Contains("spin"));
}

TEST_CASE("a kernel that divides by zero crashes with the signal's name", "[emulator]") {
  CudaSource src =
      make_source("divide", R"(extern "C" __global__ void divide(float* __restrict__ out, int d) {
  out[threadIdx.x] = static_cast<float>(100 / (d + threadIdx.x - 3));
}
)",
                  {buffer_param("out", 8), int_param("d")}, Dim3{1, 1, 1}, Dim3{8, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 8)};
  Emulator emu;
  EmuResult r = emu.run(src, bufs, {ScalarArg::i32(0)});
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::crashed);
  REQUIRE_THAT(r.message, Contains("SIGFPE") && Contains("thread (3,0,0)"));
}

TEST_CASE("a syntax error is a compile error carrying the compiler's log", "[emulator]") {
  CudaSource src =
      make_source("broken", R"(extern "C" __global__ void broken(float* __restrict__ out) {
  out[threadIdx.x] = ;
}
)",
                  {buffer_param("out", 32)}, Dim3{1, 1, 1}, Dim3{32, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 32)};
  Emulator emu;
  EmuResult r = emu.run(src, bufs);
  REQUIRE(r.status == EmuStatus::compile_error);
  REQUIRE_THAT(r.message, Contains("kernel.cu:2") && Contains("error"));
}

TEST_CASE("parameters that disagree with the CudaSource are a compile error", "[emulator]") {
  CudaSource src = make_source(
      "takes_int", R"(extern "C" __global__ void takes_int(float* __restrict__ out, int n) {
  out[threadIdx.x] = n;
}
)",
      {buffer_param("out", 32), buffer_param("n", 32)}, Dim3{1, 1, 1}, Dim3{32, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 32),
                                  HostBuffer::zeros(ir::Type::f32(), 32)};
  Emulator emu;
  EmuResult r = emu.run(src, bufs);
  REQUIRE(r.status == EmuStatus::compile_error);
  REQUIRE_THAT(r.message, Contains("parameter 1 (n) of takes_int is not a pointer"));
}

TEST_CASE("CUTUNE_CXX chooses the compiler, a missing one is a compile error", "[emulator]") {
  CudaSource src = make_source("fill", R"(extern "C" __global__ void fill(float* __restrict__ out) {
  out[threadIdx.x] = 1.0f;
}
)",
                               {buffer_param("out", 32)}, Dim3{1, 1, 1}, Dim3{32, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 32)};
  setenv("CUTUNE_CXX", "/nonexistent/cutune-test-cxx -O2", 1);
  Emulator emu;
  EmuResult r = emu.run(src, bufs);
  unsetenv("CUTUNE_CXX");
  REQUIRE(r.status == EmuStatus::compile_error);
  REQUIRE_THAT(r.message, Contains("/nonexistent/cutune-test-cxx"));
  REQUIRE(emu.run(src, bufs).status == EmuStatus::ok);
}

TEST_CASE("a thread that overflows its stack crashes instead of corrupting others", "[emulator]") {
  CudaSource src =
      make_source("big_frame", R"(extern "C" __global__ void big_frame(float* __restrict__ out) {
  volatile float local[100000];
  for (int i = 0; i < 100000; i += 1000) {
    local[i] = threadIdx.x;
  }
  out[threadIdx.x] = local[0];
}
)",
                  {buffer_param("out", 32)}, Dim3{1, 1, 1}, Dim3{32, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 32)};
  Emulator emu;
  EmuResult r = emu.run(src, bufs);
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::crashed);
  REQUIRE_THAT(r.message, Contains("big_frame: SIGSEGV"));
}

TEST_CASE("the sampled blocks: corners, their neighbours, the middle", "[emulator][sanitizer]") {
  // Grid 8x4: corners (0,0) (7,0) (0,3) (7,3), neighbours (1,0) (0,1) (6,3) (7,2), middle (4,2).
  REQUIRE(sampled_blocks(Dim3{8, 4, 1}) == std::vector<uint64_t>{0, 1, 7, 8, 20, 23, 24, 30, 31});
  REQUIRE(sampled_blocks(Dim3{1, 1, 1}) == std::vector<uint64_t>{0});
  REQUIRE(sampled_blocks(Dim3{3, 1, 1}) == std::vector<uint64_t>{0, 1, 2});
}

// Every block writes its own 64 elements of `out`; block `thief` also writes element 0, which
// block (0,0,0) owns.
EmuResult run_overlap(unsigned thief, bool all_blocks) {
  const int n = 64 * 64;
  CudaSource src = make_source(
      "overlap", R"(extern "C" __global__ void overlap(float* __restrict__ out, int thief) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 1.0f;
  if (blockIdx.x == thief && threadIdx.x == 5) {
    out[0] = 2.0f;
  }
}
)",
      {buffer_param("out", n), int_param("thief")}, Dim3{64, 1, 1}, Dim3{64, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), n)};
  EmulatorOptions o;
  o.sanitize_all_blocks = all_blocks;
  Emulator emu(o);
  return emu.run(src, bufs, {ScalarArg::i32(static_cast<int>(thief))});
}

TEST_CASE("two blocks writing one global element race, whether sampled or not",
          "[emulator][sanitizer]") {
  // Block 1 is sampled, as block 0 is: caught by the shadows, with both lines. Sampled blocks
  // run concurrently, so either block may be the second writer, the one that reports.
  EmuResult both = run_overlap(1, false);
  INFO(both.message);
  REQUIRE(both.status == EmuStatus::race);
  REQUIRE_THAT(both.message,
               Contains("data race on global memory out[0]") &&
                   ((Contains("block (1,0,0) thread (5,0,0) at line 5") &&
                     Contains("block (0,0,0) at line 3")) ||
                    (Contains("block (0,0,0) thread (0,0,0) at line 3") &&
                     Contains("block (1,0,0) at line 5"))));
  // Block 10 is not sampled: caught by the changed value of what block 0 wrote.
  EmuResult unsampled = run_overlap(10, false);
  INFO(unsampled.message);
  REQUIRE(unsampled.status == EmuStatus::race);
  REQUIRE_THAT(unsampled.message, Contains("out[0]: written by block (0,0,0) at line 3") &&
                                      Contains("did not instrument"));
  // With every block instrumented, the shadows name block 10 itself.
  EmuResult all = run_overlap(10, true);
  INFO(all.message);
  REQUIRE(all.status == EmuStatus::race);
  REQUIRE_THAT(all.message, Contains("out[0]") && Contains("block (10,0,0)"));
  // Without the overlap, clean.
  REQUIRE(run_overlap(1000, false).status == EmuStatus::ok);
}

}  // namespace
}  // namespace cutune::emu
