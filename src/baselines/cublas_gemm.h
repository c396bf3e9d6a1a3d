#pragma once
// cuBLAS SGEMM as the reference and the baseline, loaded at run time (dlopen libcublas) so
// nothing needs it to start. TF32 stays off: the handle is in CUBLAS_DEFAULT_MATH, where SGEMM
// computes in full fp32 (TF32 needs CUBLAS_TF32_TENSOR_OP_MATH or the environment override,
// which is cleared for the process).

#include <cuda.h>

#include <cstdint>
#include <string>

namespace cutune {

// Row-major C[M,N] = A[M,K]·B[K,N], or A·Bᵀ with B stored [N,K] when `b_transposed`.
struct SgemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool b_transposed = false;
};

// The column-major cublasSgemm arguments that compute the row-major product above: cuBLAS sees
// Cᵀ = Bᵀ·Aᵀ. Pure arithmetic, tested on the CPU.
struct SgemmCall {
  bool trans_a = false, trans_b = false;  // cuBLAS's transa/transb (applied to B, then A)
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;  // for the first operand (B), the second (A), and C
};
SgemmCall sgemm_call(const SgemmShape& shape);

// Storage of a GEMM operand for gemm_ex.
enum class GemmStorage { float32, float16, bfloat16 };

// A cuBLAS handle on the current context. Move-only; the destructor never throws.
class CublasGemm {
 public:
  // Throws CudaError (library "cuBLAS") when cuBLAS cannot be loaded or initialised.
  CublasGemm();
  ~CublasGemm();
  CublasGemm(CublasGemm&& other) noexcept;
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;
  CublasGemm& operator=(CublasGemm&&) = delete;

  // Enqueues C = A·B on the default stream; device pointers.
  void sgemm(const SgemmShape& shape, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c);
  // The same product by cublasGemmEx with 16-bit (or fp32) A and B, C in `output`, and fp32
  // accumulation (CUBLAS_COMPUTE_32F): the baseline of the tensor-core templates.
  void gemm_ex(const SgemmShape& shape, GemmStorage input, GemmStorage output, CUdeviceptr a,
               CUdeviceptr b, CUdeviceptr c);

 private:
  void* handle_ = nullptr;
};

// "" when cuBLAS loads, else why not.
std::string cublas_unavailable_reason();

}  // namespace cutune
