#pragma once
// cuBLAS SGEMM as the reference and the baseline, loaded at run time (dlopen libcublas) so
// nothing needs it to start. TF32 stays off: the handle is in CUBLAS_DEFAULT_MATH, where SGEMM
// computes in full fp32 (TF32 needs CUBLAS_TF32_TENSOR_OP_MATH or the environment override,
// which is cleared for the process).

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/baselines/algorithm_search.h"

namespace cutune {

// Row-major C[M,N] = A[M,K]·B[K,N], or A·Bᵀ with B stored [N,K] when `b_transposed`.
struct SgemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool b_transposed = false;
  friend bool operator==(const SgemmShape&, const SgemmShape&) = default;
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

// One way cuBLAS computes a 16-bit product, for the baseline: cublasGemmEx's default
// algorithm, or one of cuBLASLt's heuristic algorithms for the same product.
struct CublasAlgoPerf {
  int lt_index = -1;  // -1: cublasGemmEx's default; else the heuristic result's index
  std::string name = "GemmEx default";  // or "cuBLASLt heuristic 3"
  double time_s = 0;                    // find_gemm_ex(): mean of 10 warm runs (CUDA events)
  size_t workspace_bytes = 0;
  bool ok = true;
};

// cuBLASLt's column-major matrix layouts of the same product (sgemm_call's view: our B first,
// op(first) call.m x call.k, second call.k x call.n, result call.m x call.n). Pure arithmetic,
// tested on the CPU.
struct LtLayout {
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
};
struct CublasLtLayouts {
  bool trans_first = false;
  LtLayout first, second, result;
};
CublasLtLayouts cublaslt_layouts(const SgemmShape& shape);

// cuBLASLt's side of a CublasGemm (cublas_gemm.cc): its handle, the product's descriptors and
// the heuristic algorithms.
struct CublasLtGemm;

// Creates cuBLASLt's matmul and layout descriptors of the 16-bit product (fp32 compute and
// scale, the column-major form of sgemm_call); no GPU is needed. CudaError (library
// "cuBLASLt") when cuBLASLt cannot be loaded or rejects a descriptor.
void cublaslt_descriptor_check(const SgemmShape& shape, GemmStorage input, GemmStorage output);
// "" when libcublasLt loads and has every function used here, else why not (no GPU needed).
std::string cublaslt_unavailable_reason();

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
  // accumulation (CUBLAS_COMPUTE_32F): the baseline of the tensor-core templates. After
  // find_gemm_ex(), by the algorithm it chose (for the shape and types it was given).
  void gemm_ex(const SgemmShape& shape, GemmStorage input, GemmStorage output, CUdeviceptr a,
               CUdeviceptr b, CUdeviceptr c);

  // For the baseline of a 16-bit product: times cublasGemmEx's default and cuBLASLt's first
  // `max_algos` heuristic algorithms for the same product (fp32 compute and scale, workspaces
  // of up to `max_workspace_bytes`) on the given buffers, c overwritten, warm (10 runs after
  // 3, CUDA events); chooses the fastest for gemm_ex and returns them fastest first. cublasGemmEx
  // picks one algorithm by its own heuristic, which need not be cuBLAS's fastest for the shape.
  // Without cuBLASLt only the default is there, and lt_note() says why.
  std::vector<CublasAlgoPerf> find_gemm_ex(const SgemmShape& shape, GemmStorage input,
                                           GemmStorage output, CUdeviceptr a, CUdeviceptr b,
                                           CUdeviceptr c, int max_algos = 16,
                                           size_t max_workspace_bytes = size_t(256) << 20);
  const CublasAlgoPerf& chosen() const { return chosen_; }
  const std::string& lt_note() const { return lt_note_; }

 private:
  void choose(const CublasAlgoPerf& algo);
  void release() noexcept;

  void* handle_ = nullptr;
  std::unique_ptr<CublasLtGemm> lt_;
  CublasAlgoPerf chosen_;
  std::string lt_note_;
  DeviceWorkspace workspace_;
};

// "" when cuBLAS loads, else why not.
std::string cublas_unavailable_reason();

}  // namespace cutune
