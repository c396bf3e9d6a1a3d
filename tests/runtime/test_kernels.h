#pragma once
// Small self-contained kernels the runtime tests compile.

#include <string>

#include "src/codegen/cuda_source.h"

namespace cutune::test {

inline CudaSource axpy_source(const std::string& name = "axpy", float a = 2.0f) {
  CudaSource source;
  source.kernel_name = name;
  source.code = "extern \"C\" __global__ void " + name +
                "(float* y, const float* x, int n) {\n"
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "  if (i < n) y[i] = " +
                std::to_string(a) +
                "f * x[i] + y[i];\n"
                "}\n";
  source.params = {{"y", ir::Type::f32(), true, false, 256},
                   {"x", ir::Type::f32(), true, true, 256},
                   {"n", ir::Type::i32(), false, false, 0}};
  source.launch.grid = {2, 1, 1};
  source.launch.block = {128, 1, 1};
  return source;
}

inline CudaSource syntax_error_source() {
  CudaSource source;
  source.kernel_name = "broken";
  source.code =
      "extern \"C\" __global__ void broken(float* y) {\n"
      "  y[threadIdx.x] = 1.0f + ;\n"
      "}\n";
  return source;
}

// A per-thread array indexed at run time lives in local memory (a stack frame), and with few
// registers allowed its live values spill.
inline CudaSource local_memory_source() {
  CudaSource source;
  source.kernel_name = "local_heavy";
  source.code = R"(extern "C" __global__ void local_heavy(float* a, const float* b, int n) {
  float acc[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = b[i * n + threadIdx.x];
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int i = 0; i < 32; ++i) acc[i] = acc[i] * acc[(i + j) % 32] + 1.0f;
  float table[256];
  for (int i = 0; i < 256; ++i) table[i] = b[(i * 7 + threadIdx.x) % n];
  float s = table[(n * threadIdx.x) % 256];
#pragma unroll
  for (int i = 0; i < 32; ++i) s += acc[i];
  a[threadIdx.x] = s;
}
)";
  return source;
}

}  // namespace cutune::test
