// The sanitizer's rules for reads of shared memory no thread of the block wrote (sanitizer.h):
// tracked (the default), where such a read fails only when its value reaches an output, a
// branch or an address, and is otherwise counted as a note; strict, where every one fails.
// Each kernel runs two blocks of 64 threads; threads 0..31 fill the first half of `s`, and
// threads 32..63 read the second half, which nobody wrote.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "src/emulator/emulator.h"
#include "tests/emulator/emulator_fixtures.h"

namespace cutune::emu {
namespace {

using Catch::Matchers::Contains;
using testing::buffer_param;
using testing::make_source;

constexpr int kBlocks = 2, kThreads = 64;

// A kernel `name` with `body` after `s` and `r` (two shared float[64]) and `t` (threadIdx.x).
CudaSource kernel(const std::string& name, const std::string& body) {
  return make_source(name,
                     "extern \"C\" __global__ void " + name +
                         "(float* __restrict__ out) {\n"
                         "  __shared__ float s[64];\n"
                         "  __shared__ float r[64];\n"
                         "  const int t = threadIdx.x;\n"
                         "  const int o = blockIdx.x * 64 + t;\n" +
                         body + "}\n",
                     {buffer_param("out", kBlocks * kThreads)}, Dim3{kBlocks, 1, 1},
                     Dim3{kThreads, 1, 1});
}

EmuResult run(const CudaSource& src, std::vector<HostBuffer>& bufs, bool strict = false) {
  EmulatorOptions options;
  options.host_threads = 1;
  options.strict_uninitialised = strict;
  return Emulator(options).run(src, bufs);
}

std::vector<HostBuffer> outputs(float value = 0.0f) {
  std::vector<float> v(kBlocks * kThreads, value);
  std::vector<HostBuffer> bufs;
  bufs.push_back(HostBuffer::from_floats(v));
  return bufs;
}

void require_ok(const EmuResult& r) {
  INFO(to_string(r.status) << ": " << r.message);
  REQUIRE(r.status == EmuStatus::ok);
}

void require_fails(const EmuResult& r, const std::string& why, const std::string& first_read) {
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::uninitialized_read);
  REQUIRE_THAT(r.message, Contains("read of uninitialised shared " + first_read) &&
                              Contains("no thread of the block wrote it before") && Contains(why));
}

// Edge tiles: the threads past the tile compute from shared memory nobody filled, keep the
// result (in shared memory), and never store it.
const std::string kEdgeTile = R"(  if (t < 32) s[t] = 1.0f + t;
  __syncthreads();
  r[t] = s[t] * 2.0f;
  __syncthreads();
)";

TEST_CASE("a value read uninitialised that reaches no output is a note, and fails under strict",
          "[emulator][sanitizer]") {
  CudaSource src = kernel("edge_tile", kEdgeTile + "  if (t < 32) out[o] = r[t];\n");
  std::vector<HostBuffer> bufs = outputs();
  EmuResult tracked = run(src, bufs);
  require_ok(tracked);
  CHECK(tracked.uninitialised_reads == kBlocks * 32);
  std::vector<float> out = bufs[0].to_floats();
  for (int b = 0; b < kBlocks; ++b) {
    for (int t = 0; t < kThreads; ++t) {
      INFO("block " << b << " thread " << t);
      REQUIRE(out[b * kThreads + t] == (t < 32 ? 2.0f * (1 + t) : 0.0f));
    }
  }
  bufs = outputs();
  EmuResult strict = run(src, bufs, true);
  require_fails(strict, "", "s[32] by block (0,0,0) thread (32,0,0) at line 8");
  CHECK(strict.uninitialised_reads == 0);
}

TEST_CASE("a block that reads uninitialised values runs again from the outputs it found",
          "[emulator][sanitizer]") {
  // Read-modify-write of the output: the reruns start from the values before the block, so
  // each output is added to once.
  CudaSource src = kernel("accumulate", kEdgeTile + "  if (t < 32) out[o] = out[o] + r[t];\n");
  std::vector<HostBuffer> bufs = outputs(5.0f);
  EmuResult r = run(src, bufs);
  require_ok(r);
  CHECK(r.uninitialised_reads == kBlocks * 32);
  std::vector<float> out = bufs[0].to_floats();
  for (int t = 0; t < kBlocks * kThreads; ++t) {
    INFO("element " << t);
    REQUIRE(out[t] == (t % 64 < 32 ? 5.0f + 2.0f * (1 + t % 64) : 5.0f));
  }
}

TEST_CASE("a value read uninitialised that is stored to global memory fails",
          "[emulator][sanitizer]") {
  CudaSource src = kernel("store_it", kEdgeTile + "  out[o] = r[t];\n");
  std::vector<HostBuffer> bufs = outputs();
  require_fails(run(src, bufs), "its value reaches an output: out[32] changes",
                "s[32] by block (0,0,0) thread (32,0,0) at line 8");
}

TEST_CASE("a value read uninitialised that decides a branch fails", "[emulator][sanitizer]") {
  CudaSource src = kernel("branch_on_it", R"(  if (t < 32) s[t] = 1.0f;
  __syncthreads();
  if (s[t] > 2.0f) r[t] = 1.0f;
  __syncthreads();
  if (t < 32) out[o] = s[t];
)");
  std::vector<HostBuffer> bufs = outputs();
  require_fails(run(src, bufs), "its value decides a branch or an address",
                "s[32] by block (0,0,0) thread (32,0,0) at line 8");
}

TEST_CASE("a value read uninitialised that is used as an index fails", "[emulator][sanitizer]") {
  // The index stays inside the table (& 15), so only the tracked rule can tell.
  CudaSource src = kernel("index_with_it", R"(  __shared__ int idx[64];
  if (t < 32) idx[t] = t & 15;
  if (t < 16) s[t] = 0.5f * t;
  __syncthreads();
  r[t] = s[idx[t] & 15];
  __syncthreads();
  if (t < 32) out[o] = r[t];
)");
  std::vector<HostBuffer> bufs = outputs();
  require_fails(run(src, bufs), "its value decides a branch or an address",
                "idx[32] by block (0,0,0) thread (32,0,0) at line 10");
}

TEST_CASE("a value read uninitialised and copied to shared memory that reaches global fails",
          "[emulator][sanitizer]") {
  // Threads 0..31 copy the second half of s, which nobody wrote, into the elements of r that
  // they then store.
  CudaSource src = kernel("copy_it", R"(  if (t < 32) s[t] = 1.0f;
  __syncthreads();
  r[t] = s[63 - t];
  __syncthreads();
  if (t < 32) out[o] = r[t];
)");
  std::vector<HostBuffer> bufs = outputs();
  require_fails(run(src, bufs), "its value reaches an output: out[0] changes",
                "s[63] by block (0,0,0) thread (0,0,0) at line 8");
}

TEST_CASE("a block with global atomics and uninitialised reads falls back to the strict rule",
          "[emulator][sanitizer]") {
  // The block cannot run again: its atomics would count twice, and other blocks add too.
  CudaSource src = kernel("atomics", kEdgeTile + "  if (t < 32) atomicAdd(&out[t], r[t]);\n");
  std::vector<HostBuffer> bufs = outputs();
  require_fails(run(src, bufs), "the block uses global atomics",
                "s[32] by block (0,0,0) thread (32,0,0) at line 8");
}

}  // namespace
}  // namespace cutune::emu
