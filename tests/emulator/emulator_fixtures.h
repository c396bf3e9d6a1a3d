#pragma once
// Small builders for the hand-written kernels of the emulator's tests.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"

namespace cutune::emu::testing {

inline KernelParam buffer_param(std::string name, int64_t elements, bool is_const = false) {
  return KernelParam{std::move(name), ir::Type::f32(), true, is_const, elements};
}

inline KernelParam int_param(std::string name) {
  return KernelParam{std::move(name), ir::Type::i32(), false, false, 0};
}

inline CudaSource make_source(std::string name, std::string code, std::vector<KernelParam> params,
                              Dim3 grid, Dim3 block, uint32_t dynamic_smem = 0) {
  CudaSource src;
  src.kernel_name = std::move(name);
  src.code = std::move(code);
  src.params = std::move(params);
  src.launch.grid = grid;
  src.launch.block = block;
  src.launch.dynamic_smem_bytes = dynamic_smem;
  return src;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// C (MxN) = A (MxK) * B (KxN), all row-major, accumulated in float in k order.
inline std::vector<float> reference_gemm(const std::vector<float>& a, const std::vector<float>& b,
                                         int m, int n, int k) {
  std::vector<float> c(static_cast<size_t>(m) * n, 0.0f);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int kk = 0; kk < k; ++kk) acc += double{a[i * k + kk]} * b[kk * n + j];
      c[i * n + j] = static_cast<float>(acc);
    }
  }
  return c;
}

// A tiled GEMM the way the code generator writes one: 64x64 tiles, 256 threads, 4x4 outputs
// per thread, K in steps of 8 through shared memory, float4 loads and stores. Needs M and N
// multiples of 64 and K a multiple of 8.
inline std::string gemm_64x64_code() {
  return R"(extern "C" __global__ void __launch_bounds__(256) gemm_kernel(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K) {
  __shared__ __align__(16) float A_shared[512];
  __shared__ __align__(16) float B_shared[512];
  float C_local[16];
  #pragma unroll
  for (int i = 0; i < 16; ++i) {
    C_local[i] = 0.0f;
  }
  const int t = threadIdx.y * 16 + threadIdx.x;
  const int row0 = blockIdx.y * 64;
  const int col0 = blockIdx.x * 64;
  for (int k0 = 0; k0 < K; k0 += 8) {
    if (t < 128) {
      const int r = t >> 1;
      const int c = (t & 1) * 4;
      float4 a = *reinterpret_cast<const float4*>(&A[(row0 + r) * K + k0 + c]);
      A_shared[(c + 0) * 64 + r] = a.x;
      A_shared[(c + 1) * 64 + r] = a.y;
      A_shared[(c + 2) * 64 + r] = a.z;
      A_shared[(c + 3) * 64 + r] = a.w;
    } else {
      const int r = (t - 128) >> 4;
      const int c = ((t - 128) & 15) * 4;
      *reinterpret_cast<float4*>(&B_shared[r * 64 + c]) = *reinterpret_cast<const float4*>(&B[(k0 + r) * N + col0 + c]);
    }
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      float4 a = *reinterpret_cast<const float4*>(&A_shared[kk * 64 + threadIdx.y * 4]);
      float4 b = *reinterpret_cast<const float4*>(&B_shared[kk * 64 + threadIdx.x * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w};
      const float bv[4] = {b.x, b.y, b.z, b.w};
      #pragma unroll
      for (int i = 0; i < 4; ++i) {
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
          C_local[i * 4 + j] = fmaf(av[i], bv[j], C_local[i * 4 + j]);
        }
      }
    }
    __syncthreads();
  }
  #pragma unroll
  for (int i = 0; i < 4; ++i) {
    *reinterpret_cast<float4*>(&C[(row0 + threadIdx.y * 4 + i) * N + col0 + threadIdx.x * 4]) =
        make_float4(C_local[i * 4 + 0], C_local[i * 4 + 1], C_local[i * 4 + 2], C_local[i * 4 + 3]);
  }
}
)";
}

inline CudaSource gemm_64x64_source(int m, int n, int k) {
  return make_source(
      "gemm_kernel", gemm_64x64_code(),
      {buffer_param("C", int64_t{m} * n), buffer_param("A", int64_t{m} * k, true),
       buffer_param("B", int64_t{k} * n, true), int_param("M"), int_param("N"), int_param("K")},
      Dim3{static_cast<uint32_t>(n / 64), static_cast<uint32_t>(m / 64), 1}, Dim3{16, 16, 1});
}

}  // namespace cutune::emu::testing
