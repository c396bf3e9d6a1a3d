// Runs the GEMM kernels of a `cutune export` folder through the header-only loader and checks
// each against cuBLAS on the same inputs: SGEMM (TF32 off) for the fp32 GEMMs, cublasGemmEx
// with fp32 accumulation for the fp16/bf16 ones (mma.sync and wgmma, fp32 or 16-bit C; the
// wgmma kernels with TMA loads get their tensor maps from the loader). GPU only.
//
//   export_example DIR        exit 0 when every GEMM matches, 1 otherwise, 77 without a GPU

#include <cublas_v2.h>
#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/export/cubin_loader.h"

namespace {

// The element types of the exported GEMMs, as the manifest names them.
enum class Elem { f32, f16, bf16 };

Elem elem_of(const std::string& dtype) {
  if (dtype == "float16") return Elem::f16;
  if (dtype == "bfloat16") return Elem::bf16;
  if (dtype == "float32") return Elem::f32;
  throw std::runtime_error("export_example: unexpected buffer type " + dtype);
}

size_t elem_bytes(Elem e) { return e == Elem::f32 ? 4 : 2; }

cudaDataType cublas_type(Elem e) {
  return e == Elem::f16 ? CUDA_R_16F : e == Elem::bf16 ? CUDA_R_16BF : CUDA_R_32F;
}

// `x` rounded to nearest even in `e`, as stored bits (the low bytes of the result).
uint32_t to_bits(float x, Elem e) {
  if (e == Elem::f16) {
    _Float16 h = static_cast<_Float16>(x);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  }
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (e == Elem::bf16) return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // finite inputs only
  return u;
}

float from_bits(const unsigned char* p, Elem e) {
  if (e == Elem::f16) {
    _Float16 h;
    std::memcpy(&h, p, 2);
    return static_cast<float>(h);
  }
  uint32_t u = 0;
  if (e == Elem::bf16) {
    uint16_t b;
    std::memcpy(&b, p, 2);
    u = uint32_t(b) << 16;
  } else {
    std::memcpy(&u, p, 4);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<float> read_back(CUdeviceptr d, size_t elements, Elem e) {
  std::vector<unsigned char> raw(elements * elem_bytes(e));
  cutune_loader::check(cuMemcpyDtoH(raw.data(), d, raw.size()), "cuMemcpyDtoH");
  std::vector<float> out(elements);
  for (size_t i = 0; i < elements; ++i) out[i] = from_bits(raw.data() + i * elem_bytes(e), e);
  return out;
}

}  // namespace

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
    const std::string op = m.raw["task"]["op"];
    if (op != "gemm" && op != "gemm_fp16" && op != "gemm_bf16") continue;
    const auto shape = m.raw["task"]["shape"].get<std::vector<int64_t>>();
    const int M = int(shape[0]), N = int(shape[1]), K = int(shape[2]);
    const std::string tmpl = m.raw["task"]["template"];
    const bool nt = tmpl.find("_nt") != std::string::npos;  // B stored [N, K]
    cutune_loader::LoadedKernel kernel(m, argv[1]);

    std::mt19937 rng(1);
    std::uniform_real_distribution<float> uni(-1.f, 1.f);
    std::vector<CUdeviceptr> buffers;
    std::map<std::string, CUdeviceptr> by_name;
    CUdeviceptr a = 0, b = 0, c = 0;
    Elem in = Elem::f32, out = Elem::f32;
    for (const cutune_loader::Param& p : m.params) {
      if (p.is_tensor_map) continue;  // encoded by launch_buffers over its buffer
      const Elem e = elem_of(p.type);
      CUdeviceptr d;
      cutune_loader::check(cuMemAlloc(&d, size_t(p.bytes)), "cuMemAlloc");
      std::vector<unsigned char> host(size_t(p.bytes));
      for (int64_t i = 0; i < p.elements; ++i) {
        const uint32_t bits = to_bits(uni(rng), e);
        std::memcpy(host.data() + size_t(i) * elem_bytes(e), &bits, elem_bytes(e));
      }
      cutune_loader::check(cuMemcpyHtoD(d, host.data(), host.size()), "cuMemcpyHtoD");
      buffers.push_back(d);
      by_name[p.name] = d;
      if (p.name == "A") a = d, in = e;
      if (p.name == "B") b = d;
      if (p.name == "C") c = d, out = e;
    }
    // C holds random values until the launch: an element the kernel does not write, or a
    // split-K output launch_buffers failed to zero, shows as a mismatch.
    kernel.launch_buffers(by_name);
    cutune_loader::check(cuCtxSynchronize(), "the exported kernel");
    const std::vector<float> got = read_back(c, size_t(M) * N, out);

    // Row-major C = A·B as column-major Cᵀ = Bᵀ·Aᵀ.
    const float alpha = 1, beta = 0;
    const cublasOperation_t op_b = nt ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t st;
    if (in == Elem::f32) {
      st = cublasSgemm(cublas, op_b, CUBLAS_OP_N, N, M, K, &alpha, reinterpret_cast<float*>(b),
                       nt ? K : N, reinterpret_cast<float*>(a), K, &beta,
                       reinterpret_cast<float*>(c), N);
    } else {
      st = cublasGemmEx(cublas, op_b, CUBLAS_OP_N, N, M, K, &alpha, reinterpret_cast<void*>(b),
                        cublas_type(in), nt ? K : N, reinterpret_cast<void*>(a), cublas_type(in),
                        K, &beta, reinterpret_cast<void*>(c), cublas_type(out), N,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
      std::printf("%s: cuBLAS failed (status %d)\n", m.name.c_str(), int(st));
      return 1;
    }
    cutune_loader::check(cuCtxSynchronize(), "cuBLAS");
    const std::vector<float> want = read_back(c, size_t(M) * N, out);
    double rms = 0, worst = 0;
    for (float w : want) rms += double(w) * w;
    rms = std::sqrt(rms / double(want.size()));
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(
          worst, std::abs(double(got[i]) - want[i]) / std::max<double>(std::abs(want[i]), rms));
    // Summation order differs from cuBLAS's; a 16-bit C adds a rounding of each side.
    const double rounding = out == Elem::f16 ? 0x1p-10 : out == Elem::bf16 ? 0x1p-7 : 0;
    const bool ok = std::isfinite(worst) && worst < 64 * 0x1p-24 * std::sqrt(double(K)) + 1e-6 +
                                                        2 * rounding;
    std::printf("%s: %s (max rel error %.3g)\n", m.name.c_str(), ok ? "matches cuBLAS" : "WRONG",
                worst);
    failures += !ok;
    for (CUdeviceptr d : buffers) cuMemFree(d);
  }
  cublasDestroy(cublas);
  cuDevicePrimaryCtxRelease(device);
  return failures ? 1 : 0;
}
