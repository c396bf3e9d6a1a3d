#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include "src/emulator/emulator.h"
#include "tests/emulator/emulator_fixtures.h"

namespace cutune::emu {
namespace {

using testing::buffer_param;
using testing::int_param;
using testing::make_source;
using testing::random_floats;

void require_ok(const EmuResult& r) {
  INFO(to_string(r.status) << ": " << r.message);
  REQUIRE(r.status == EmuStatus::ok);
}

// A 2D grid of 2D blocks over a W x H image, with the tail guard the code generator emits.
CudaSource add_2d_source(int w, int h) {
  return make_source(
      "add_2d",
      R"(extern "C" __global__ void add_2d(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int W, int H) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < W && y < H) {
    C[y * W + x] = A[y * W + x] + 2.0f * B[y * W + x];
  }
}
)",
      {buffer_param("C", w * h), buffer_param("A", w * h, true), buffer_param("B", w * h, true),
       int_param("W"), int_param("H")},
      Dim3{static_cast<uint32_t>((w + 15) / 16), static_cast<uint32_t>((h + 7) / 8), 1},
      Dim3{16, 8, 1});
}

TEST_CASE("a 2D vector add with a tail guard matches a CPU loop", "[emulator]") {
  const int w = 37, h = 21;
  std::vector<float> a = random_floats(w * h, 1), b = random_floats(w * h, 2);
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), w * h),
                                  HostBuffer::from_floats(a), HostBuffer::from_floats(b)};
  Emulator emu;
  EmuResult r = emu.run(add_2d_source(w, h), bufs, {ScalarArg::i32(w), ScalarArg::i32(h)});
  require_ok(r);
  std::vector<float> c = bufs[0].to_floats();
  for (int i = 0; i < w * h; ++i) REQUIRE(c[i] == a[i] + 2.0f * b[i]);
  // Inputs are not written back, and stay as they were.
  REQUIRE(bufs[1].to_floats() == a);
}

TEST_CASE("a grid-stride loop sees blockDim and gridDim, float4 loads work", "[emulator]") {
  const int n4 = 1000;  // float4 elements
  CudaSource src = make_source(
      "scale4",
      R"(extern "C" __global__ void scale4(float* __restrict__ out, const float* __restrict__ in, int n4) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += blockDim.x * gridDim.x) {
    float4 v = __ldg(reinterpret_cast<const float4*>(in) + i);
    v.x *= 3.0f; v.y *= 3.0f; v.z *= 3.0f; v.w *= 3.0f;
    reinterpret_cast<float4*>(out)[i] = v;
  }
}
)",
      {buffer_param("out", 4 * n4), buffer_param("in", 4 * n4, true), int_param("n4")},
      Dim3{3, 1, 1}, Dim3{64, 1, 1});
  std::vector<float> in = random_floats(4 * n4, 3);
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 4 * n4),
                                  HostBuffer::from_floats(in)};
  Emulator emu;
  require_ok(emu.run(src, bufs, {ScalarArg::i32(n4)}));
  std::vector<float> out = bufs[0].to_floats();
  for (int i = 0; i < 4 * n4; ++i) REQUIRE(out[i] == 3.0f * in[i]);
}

// 32x32 tiles, 256 threads as 8 x 32, each thread a 1x4 strip read from shared memory as a
// float4; every load and store guarded, so any M, N, K works.
CudaSource odd_gemm_source(int m, int n, int k) {
  return make_source(
      "gemm_tail",
      R"(extern "C" __global__ void __launch_bounds__(256) gemm_tail(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K) {
  __shared__ __align__(16) float A_shared[256];
  __shared__ __align__(16) float B_shared[256];
  float C_local[4];
  for (int j = 0; j < 4; ++j) {
    C_local[j] = 0.0f;
  }
  const int t = threadIdx.y * 8 + threadIdx.x;
  const int row = blockIdx.y * 32 + threadIdx.y;
  const int col = blockIdx.x * 32 + threadIdx.x * 4;
  for (int k0 = 0; k0 < K; k0 += 8) {
    const int a_row = blockIdx.y * 32 + (t >> 3);
    const int a_col = k0 + (t & 7);
    A_shared[t] = (a_row < M && a_col < K) ? A[a_row * K + a_col] : 0.0f;
    const int b_row = k0 + (t >> 5);
    const int b_col = blockIdx.x * 32 + (t & 31);
    B_shared[t] = (b_row < K && b_col < N) ? B[b_row * N + b_col] : 0.0f;
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      const float a = A_shared[threadIdx.y * 8 + kk];
      const float4 b = *reinterpret_cast<const float4*>(&B_shared[kk * 32 + threadIdx.x * 4]);
      C_local[0] = fmaf(a, b.x, C_local[0]);
      C_local[1] = fmaf(a, b.y, C_local[1]);
      C_local[2] = fmaf(a, b.z, C_local[2]);
      C_local[3] = fmaf(a, b.w, C_local[3]);
    }
    __syncthreads();
  }
  for (int j = 0; j < 4; ++j) {
    if (row < M && col + j < N) {
      C[row * N + col + j] = C_local[j];
    }
  }
}
)",
      {buffer_param("C", m * n), buffer_param("A", m * k, true), buffer_param("B", k * n, true),
       int_param("M"), int_param("N"), int_param("K")},
      Dim3{static_cast<uint32_t>((n + 31) / 32), static_cast<uint32_t>((m + 31) / 32), 1},
      Dim3{8, 32, 1});
}

std::vector<float> run_odd_gemm(Emulator& emu, int m, int n, int k) {
  std::vector<float> a = random_floats(m * k, 4), b = random_floats(k * n, 5);
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), m * n),
                                  HostBuffer::from_floats(a), HostBuffer::from_floats(b)};
  require_ok(emu.run(odd_gemm_source(m, n, k), bufs,
                     {ScalarArg::i32(m), ScalarArg::i32(n), ScalarArg::i32(k)}));
  return bufs[0].to_floats();
}

TEST_CASE("a tiled shared-memory GEMM on an odd shape matches a CPU reference", "[emulator]") {
  const int m = 67, n = 45, k = 33;
  Emulator emu;
  std::vector<float> c = run_odd_gemm(emu, m, n, k);
  std::vector<float> ref =
      testing::reference_gemm(random_floats(m * k, 4), random_floats(k * n, 5), m, n, k);
  for (int i = 0; i < m * n; ++i) {
    INFO("element " << i);
    REQUIRE(std::abs(c[i] - ref[i]) <= 1e-5f * std::max(1.0f, std::abs(ref[i])));
  }
}

TEST_CASE("results do not depend on the number of host threads", "[emulator]") {
  const int m = 67, n = 45, k = 33;
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 5}) {
    EmulatorOptions options;
    options.host_threads = threads;
    Emulator emu(options);
    results.push_back(run_odd_gemm(emu, m, n, k));
  }
  REQUIRE(std::memcmp(results[0].data(), results[1].data(), results[0].size() * 4) == 0);
  REQUIRE(std::memcmp(results[0].data(), results[2].data(), results[0].size() * 4) == 0);
}

TEST_CASE("a shared-memory tree reduction with a barrier per level", "[emulator]") {
  const int n = 1000, block = 256, blocks = (n + block - 1) / block;
  CudaSource src = make_source(
      "block_sum",
      R"(extern "C" __global__ void block_sum(float* __restrict__ out, const float* __restrict__ in, int n) {
  __shared__ float partial[256];
  const int i = blockIdx.x * 256 + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[blockIdx.x] = partial[0];
  }
}
)",
      {buffer_param("out", blocks), buffer_param("in", n, true), int_param("n")},
      Dim3{blocks, 1, 1}, Dim3{block, 1, 1});
  std::vector<float> in = random_floats(n, 6);
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), blocks),
                                  HostBuffer::from_floats(in)};
  Emulator emu;
  require_ok(emu.run(src, bufs, {ScalarArg::i32(n)}));
  std::vector<float> out = bufs[0].to_floats();
  for (int b = 0; b < blocks; ++b) {
    double ref = 0;
    for (int i = b * block; i < std::min(n, (b + 1) * block); ++i) ref += in[i];
    REQUIRE(out[b] == Approx(ref).epsilon(1e-5));
  }
}

TEST_CASE("dynamic shared memory holds the launch's size", "[emulator]") {
  const int block = 128, blocks = 3, n = block * blocks;
  CudaSource src =
      make_source("reverse_blocks", R"(extern __shared__ __align__(16) unsigned char dyn_smem[];
extern "C" __global__ void reverse_blocks(float* __restrict__ out, const float* __restrict__ in) {
  float* buf = reinterpret_cast<float*>(dyn_smem);
  const int base = blockIdx.x * blockDim.x;
  buf[threadIdx.x] = in[base + threadIdx.x];
  __syncthreads();
  out[base + threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
)",
                  {buffer_param("out", n), buffer_param("in", n, true)}, Dim3{blocks, 1, 1},
                  Dim3{block, 1, 1}, block * 4);
  std::vector<float> in = random_floats(n, 7);
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), n),
                                  HostBuffer::from_floats(in)};
  Emulator emu;
  require_ok(emu.run(src, bufs));
  std::vector<float> out = bufs[0].to_floats();
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < block; ++t) REQUIRE(out[b * block + t] == in[b * block + block - 1 - t]);
  }
}

TEST_CASE("shared memory nobody wrote reads as NaN", "[emulator]") {
  CudaSource src = make_source(
      "read_unwritten", R"(extern "C" __global__ void read_unwritten(float* __restrict__ out) {
  __shared__ float s[64];
  if (threadIdx.x < 32) {
    s[threadIdx.x] = 1.0f;
  }
  __syncthreads();
  out[blockIdx.x * 64 + threadIdx.x] = s[threadIdx.x];
}
)",
      {buffer_param("out", 128)}, Dim3{2, 1, 1}, Dim3{64, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 128)};
  EmulatorOptions options;
  options.host_threads = 1;  // the second block reuses the first one's shared memory
  // The sanitizer reports the first such read.
  EmuResult checked = Emulator(options).run(src, bufs);
  REQUIRE(checked.status == EmuStatus::uninitialized_read);
  REQUIRE_THAT(checked.message, Catch::Matchers::Contains(
                                    "read of uninitialised shared s[32] by block (0,0,0) thread "
                                    "(32,0,0) at line 7"));
  // Without it, the poison shows.
  options.racecheck = false;
  options.memcheck = false;
  Emulator emu(options);
  require_ok(emu.run(src, bufs));
  std::vector<float> out = bufs[0].to_floats();
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t < 64; ++t) {
      if (t < 32)
        REQUIRE(out[b * 64 + t] == 1.0f);
      else
        REQUIRE(std::isnan(out[b * 64 + t]));
    }
  }
}

TEST_CASE("the second run of a source reuses the compiled object", "[emulator]") {
  Emulator emu;
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 4 * 3),
                                  HostBuffer::zeros(ir::Type::f32(), 4 * 3),
                                  HostBuffer::zeros(ir::Type::f32(), 4 * 3)};
  EmuResult first = emu.run(add_2d_source(4, 3), bufs, {ScalarArg::i32(4), ScalarArg::i32(3)});
  EmuResult second = emu.run(add_2d_source(4, 3), bufs, {ScalarArg::i32(4), ScalarArg::i32(3)});
  require_ok(first);
  require_ok(second);
  REQUIRE_FALSE(first.compile_cached);
  REQUIRE(second.compile_cached);
}

TEST_CASE("one emulator serves runs from several threads at once", "[emulator]") {
  const int w = 19, h = 9;
  Emulator emu;
  std::vector<std::vector<float>> outs(3);
  std::vector<EmuStatus> statuses(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), w * h),
                                      HostBuffer::from_floats(random_floats(w * h, 10 + t)),
                                      HostBuffer::from_floats(random_floats(w * h, 20 + t))};
      statuses[t] =
          emu.run(add_2d_source(w, h), bufs, {ScalarArg::i32(w), ScalarArg::i32(h)}).status;
      outs[t] = bufs[0].to_floats();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 3; ++t) {
    REQUIRE(statuses[t] == EmuStatus::ok);
    std::vector<float> a = random_floats(w * h, 10 + t), b = random_floats(w * h, 20 + t);
    for (int i = 0; i < w * h; ++i) REQUIRE(outs[t][i] == a[i] + 2.0f * b[i]);
  }
}

TEST_CASE("a 256^3 GEMM compiles and runs (time printed)", "[emulator]") {
  const int s = 256;
  std::vector<float> a = random_floats(s * s, 8), b = random_floats(s * s, 9);
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), s * s),
                                  HostBuffer::from_floats(a), HostBuffer::from_floats(b)};
  Emulator emu;
  auto start = std::chrono::steady_clock::now();
  EmuResult r = emu.run(testing::gemm_64x64_source(s, s, s), bufs,
                        {ScalarArg::i32(s), ScalarArg::i32(s), ScalarArg::i32(s)});
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  require_ok(r);
  std::printf("emulator 256^3 GEMM: compile %.3f s, run %.3f s, total %.3f s\n", r.compile_seconds,
              r.run_seconds, total);
  std::vector<float> c = bufs[0].to_floats();
  std::vector<float> ref = testing::reference_gemm(a, b, s, s, s);
  for (int i = 0; i < s * s; i += 97) {
    REQUIRE(std::abs(c[i] - ref[i]) <= 1e-4f * std::max(1.0f, std::abs(ref[i])));
  }
}

}  // namespace
}  // namespace cutune::emu
