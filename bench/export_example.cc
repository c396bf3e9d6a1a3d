// Runs the GEMM kernels of a `cutune export` folder through the header-only loader and checks
// each against cuBLAS SGEMM (TF32 off) on the same inputs. GPU only.
//
//   export_example DIR        exit 0 when every GEMM matches, 1 otherwise, 77 without a GPU

#include <cublas_v2.h>
#include <cuda.h>

#include <cmath>
#include <map>
#include <cstdio>
#include <random>
#include <vector>

#include "src/export/cubin_loader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: export_example DIR\n");
    return 2;
  }
  int count = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    std::printf("skipped: no CUDA device found\n");
    return 77;
  }
  CUdevice device;
  CUcontext context;
  cutune_loader::check(cuDeviceGet(&device, 0), "cuDeviceGet");
  cutune_loader::check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  cutune_loader::check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  cublasHandle_t cublas;
  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) return 1;
  cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH);

  int failures = 0;
  for (const cutune_loader::KernelManifest& m : cutune_loader::read_manifest(argv[1])) {
    if (m.raw["task"]["op"] != "gemm") continue;
    const auto shape = m.raw["task"]["shape"].get<std::vector<int64_t>>();
    const int M = int(shape[0]), N = int(shape[1]), K = int(shape[2]);
    const bool nt = m.raw["task"]["template"] == "gemm_nt";
    cutune_loader::LoadedKernel kernel(m, argv[1]);

    std::mt19937 rng(1);
    std::uniform_real_distribution<float> uni(-1.f, 1.f);
    std::vector<CUdeviceptr> buffers;
    std::map<std::string, CUdeviceptr> by_name;
    CUdeviceptr a = 0, b = 0, c = 0;
    for (const cutune_loader::Param& p : m.params) {
      if (p.is_tensor_map) continue;  // encoded by launch_buffers over its buffer
      CUdeviceptr d;
      cutune_loader::check(cuMemAlloc(&d, size_t(p.bytes)), "cuMemAlloc");
      std::vector<float> host(size_t(p.elements));
      for (float& x : host) x = uni(rng);
      cutune_loader::check(cuMemcpyHtoD(d, host.data(), size_t(p.bytes)), "cuMemcpyHtoD");
      buffers.push_back(d);
      by_name[p.name] = d;
      if (p.name == "A") a = d;
      if (p.name == "B") b = d;
      if (p.name == "C") c = d;
    }
    kernel.launch_buffers(by_name);
    cutune_loader::check(cuCtxSynchronize(), "the exported kernel");
    std::vector<float> got(size_t(M) * N), want(size_t(M) * N);
    cutune_loader::check(cuMemcpyDtoH(got.data(), c, got.size() * 4), "cuMemcpyDtoH");

    const float alpha = 1, beta = 0;  // row-major C = A·B as column-major Cᵀ = Bᵀ·Aᵀ
    cublasSgemm(cublas, nt ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha,
                reinterpret_cast<float*>(b), nt ? K : N, reinterpret_cast<float*>(a), K, &beta,
                reinterpret_cast<float*>(c), N);
    cutune_loader::check(cuCtxSynchronize(), "cublasSgemm");
    cutune_loader::check(cuMemcpyDtoH(want.data(), c, want.size() * 4), "cuMemcpyDtoH");
    double rms = 0, worst = 0;
    for (float w : want) rms += double(w) * w;
    rms = std::sqrt(rms / double(want.size()));
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(
          worst, std::abs(double(got[i]) - want[i]) / std::max<double>(std::abs(want[i]), rms));
    const bool ok = std::isfinite(worst) && worst < 64 * 0x1p-24 * std::sqrt(double(K)) + 1e-6;
    std::printf("%s: %s (max rel error %.3g)\n", m.name.c_str(), ok ? "matches cuBLAS" : "WRONG",
                worst);
    failures += !ok;
    for (CUdeviceptr d : buffers) cuMemFree(d);
  }
  cublasDestroy(cublas);
  cuDevicePrimaryCtxRelease(device);
  return failures ? 1 : 0;
}
