#include "src/baselines/cublas_gemm.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <utility>

#include "src/runtime/cuda_check.h"
#include "src/runtime/dynamic_library.h"

#define CUTUNE_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate_v2)               \
  X(cublasDestroy_v2)              \
  X(cublasSetMathMode)             \
  X(cublasSgemm_v2)                \
  X(cublasGetStatusName)           \
  X(cublasGetStatusString)

namespace cutune {

namespace {

struct CublasApi {
#define CUTUNE_CUBLAS_ENTRY(name) decltype(&::name) name = nullptr;
  CUTUNE_CUBLAS_FUNCTIONS(CUTUNE_CUBLAS_ENTRY)
#undef CUTUNE_CUBLAS_ENTRY
  // Overloaded in C++ (compute type as cudaDataType or cublasComputeType_t): named by type.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx cublasGemmEx = nullptr;
  bool usable = false;
  std::string reason;
};

const CublasApi& api() {
  static CublasApi a;
  static std::once_flag once;
  std::call_once(once, [] {
    // TF32 must not sneak in through the environment.
    unsetenv("NVIDIA_TF32_OVERRIDE");
    void* library = open_cuda_library(CudaLibrary::cublas, &a.reason);
    if (library == nullptr) return;
    std::string missing;
#define CUTUNE_CUBLAS_RESOLVE(name)                                   \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(library, #name)); \
  if (a.name == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(#name);
    CUTUNE_CUBLAS_FUNCTIONS(CUTUNE_CUBLAS_RESOLVE)
#undef CUTUNE_CUBLAS_RESOLVE
    a.cublasGemmEx = reinterpret_cast<CublasApi::GemmEx>(dlsym(library, "cublasGemmEx"));
    if (a.cublasGemmEx == nullptr)
      missing += (missing.empty() ? "" : ", ") + std::string("cublasGemmEx");
    if (!missing.empty()) {
      a.reason = "libcublas lacks " + missing;
      return;
    }
    a.usable = true;
  });
  return a;
}

void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const CublasApi& a = api();
  throw_cuda_error(
      "cuBLAS", static_cast<int>(status), call,
      std::string(a.cublasGetStatusName(status)) + " (" + a.cublasGetStatusString(status) + ")",
      file, line);
}

#define CUTUNE_CUBLAS_CALL(call) check((call), #call, __FILE__, __LINE__)

}  // namespace

SgemmCall sgemm_call(const SgemmShape& s) {
  SgemmCall c;
  c.trans_a = s.b_transposed;  // cuBLAS's first operand is our B
  c.trans_b = false;
  c.m = static_cast<int>(s.n);
  c.n = static_cast<int>(s.m);
  c.k = static_cast<int>(s.k);
  c.lda = static_cast<int>(s.b_transposed ? s.k : s.n);
  c.ldb = static_cast<int>(s.k);
  c.ldc = static_cast<int>(s.n);
  return c;
}

std::string cublas_unavailable_reason() { return api().usable ? "" : api().reason; }

CublasGemm::CublasGemm() {
  const CublasApi& a = api();
  if (!a.usable) throw_cuda_error("cuBLAS", -1, "dlopen(libcublas)", a.reason, __FILE__, __LINE__);
  cublasHandle_t h = nullptr;
  CUTUNE_CUBLAS_CALL(a.cublasCreate_v2(&h));
  handle_ = h;
  CUTUNE_CUBLAS_CALL(a.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
}

CublasGemm::~CublasGemm() {
  if (handle_ != nullptr) api().cublasDestroy_v2(static_cast<cublasHandle_t>(handle_));
}

CublasGemm::CublasGemm(CublasGemm&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

void CublasGemm::sgemm(const SgemmShape& shape, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  const SgemmCall call = sgemm_call(shape);
  const float alpha = 1.0f, beta = 0.0f;
  CUTUNE_CUBLAS_CALL(api().cublasSgemm_v2(
      static_cast<cublasHandle_t>(handle_), call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, call.m, call.n, call.k, &alpha,
      reinterpret_cast<const float*>(b), call.lda, reinterpret_cast<const float*>(a), call.ldb,
      &beta, reinterpret_cast<float*>(c), call.ldc));
}

}  // namespace cutune

namespace cutune {

void CublasGemm::gemm_ex(const SgemmShape& shape, GemmStorage input, GemmStorage output,
                         CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  const SgemmCall call = sgemm_call(shape);
  const float alpha = 1.0f, beta = 0.0f;
  auto type = [](GemmStorage s) {
    return s == GemmStorage::float16    ? CUDA_R_16F
           : s == GemmStorage::bfloat16 ? CUDA_R_16BF
                                        : CUDA_R_32F;
  };
  // CUBLAS_COMPUTE_32F: fp32 accumulation (tensor cores for 16-bit inputs, never TF32 for fp32).
  CUTUNE_CUBLAS_CALL(api().cublasGemmEx(
      static_cast<cublasHandle_t>(handle_), call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, call.m, call.n, call.k, &alpha,
      reinterpret_cast<const void*>(b), type(input), call.lda, reinterpret_cast<const void*>(a),
      type(input), call.ldb, &beta, reinterpret_cast<void*>(c), type(output), call.ldc,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace cutune
