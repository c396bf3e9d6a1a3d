#include "src/baselines/cublas_gemm.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "src/baselines/algorithm_search.h"
#include "src/runtime/cuda_check.h"
#include "src/runtime/driver_api.h"
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
  CUTUNE_CUBLAS_FUNCTIONS(CUTUNE_TABLE_ENTRY)
  // Overloaded in C++ (compute type as cudaDataType or cublasComputeType_t): named by type.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx cublasGemmEx = nullptr;
  bool usable = false;
  std::string reason;

  void resolve(void* library, std::string& missing) {
    CUTUNE_CUBLAS_FUNCTIONS(CUTUNE_TABLE_RESOLVE)
    resolve_symbol(library, "cublasGemmEx", cublasGemmEx, missing);
  }
};

const CublasApi& api() {
  // TF32 must not sneak in through the environment.
  static const bool cleared = unsetenv("NVIDIA_TF32_OVERRIDE") == 0;
  (void)cleared;
  return loaded_table<CublasApi>(CudaLibrary::cublas, "libcublas");
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

#define CUTUNE_CUBLASLT_FUNCTIONS(X)      \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtGetStatusName)                \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmul)

CUTUNE_FUNCTION_TABLE(CublasLtApi, CUTUNE_CUBLASLT_FUNCTIONS)

const CublasLtApi& lt_api() {
  return loaded_table<CublasLtApi>(CudaLibrary::cublas_lt, "libcublasLt");
}

const CublasLtApi& require_cublaslt() {
  const CublasLtApi& a = lt_api();
  if (!a.usable)
    throw_cuda_error("cuBLASLt", -1, "dlopen(libcublasLt)", a.reason, __FILE__, __LINE__);
  return a;
}

void check_lt(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw_cuda_error("cuBLASLt", static_cast<int>(status), call,
                   lt_api().cublasLtGetStatusName(status), file, line);
}

#define CUTUNE_CUBLASLT_CALL(call) check_lt((call), #call, __FILE__, __LINE__)

cudaDataType cuda_type(GemmStorage s) {
  return s == GemmStorage::float16    ? CUDA_R_16F
         : s == GemmStorage::bfloat16 ? CUDA_R_16BF
                                      : CUDA_R_32F;
}

}  // namespace

// The product's cuBLASLt descriptors (cuBLAS's column-major view: D = op(B')·A' in sgemm_call's
// terms, our B first), and with a handle the heuristic algorithms.
struct CublasLtGemm {
  SgemmShape shape;
  GemmStorage input, output;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, result = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;

  CublasLtGemm(const SgemmShape& s, GemmStorage in, GemmStorage out)
      : shape(s), input(in), output(out) {
    const CublasLtApi& a = require_cublaslt();
    try {
      const CublasLtLayouts l = cublaslt_layouts(shape);
      CUTUNE_CUBLASLT_CALL(a.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t trans_first = l.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
      const cublasOperation_t trans_second = CUBLAS_OP_N;
      CUTUNE_CUBLASLT_CALL(a.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                            &trans_first, sizeof(trans_first)));
      CUTUNE_CUBLASLT_CALL(a.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                            &trans_second, sizeof(trans_second)));
      CUTUNE_CUBLASLT_CALL(a.cublasLtMatrixLayoutCreate(&first, cuda_type(input), l.first.rows,
                                                        l.first.cols, l.first.ld));
      CUTUNE_CUBLASLT_CALL(a.cublasLtMatrixLayoutCreate(&second, cuda_type(input), l.second.rows,
                                                        l.second.cols, l.second.ld));
      CUTUNE_CUBLASLT_CALL(a.cublasLtMatrixLayoutCreate(&result, cuda_type(output), l.result.rows,
                                                        l.result.cols, l.result.ld));
    } catch (...) {
      release();
      throw;
    }
  }
  ~CublasLtGemm() { release(); }
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  void release() noexcept {
    const CublasLtApi& a = lt_api();
    if (!a.usable) return;
    if (preference) a.cublasLtMatmulPreferenceDestroy(preference);
    if (result) a.cublasLtMatrixLayoutDestroy(result);
    if (second) a.cublasLtMatrixLayoutDestroy(second);
    if (first) a.cublasLtMatrixLayoutDestroy(first);
    if (desc) a.cublasLtMatmulDescDestroy(desc);
    if (handle) a.cublasLtDestroy(handle);
    preference = nullptr, result = second = first = nullptr, desc = nullptr, handle = nullptr;
  }

  // The handle (a GPU) and the first `max_algos` algorithms whose workspace fits.
  void find_algos(int max_algos, size_t max_workspace_bytes) {
    const CublasLtApi& a = require_cublaslt();
    if (handle == nullptr) CUTUNE_CUBLASLT_CALL(a.cublasLtCreate(&handle));
    if (preference == nullptr) CUTUNE_CUBLASLT_CALL(a.cublasLtMatmulPreferenceCreate(&preference));
    const uint64_t workspace = max_workspace_bytes;
    CUTUNE_CUBLASLT_CALL(a.cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
    algos.assign(size_t(std::max(max_algos, 1)), cublasLtMatmulHeuristicResult_t{});
    int returned = 0;
    CUTUNE_CUBLASLT_CALL(a.cublasLtMatmulAlgoGetHeuristic(handle, desc, first, second, result,
                                                          result, preference, int(algos.size()),
                                                          algos.data(), &returned));
    algos.resize(size_t(std::max(returned, 0)));
    std::erase_if(algos, [](const cublasLtMatmulHeuristicResult_t& r) {
      return r.state != CUBLAS_STATUS_SUCCESS;
    });
  }

  void matmul(int index, CUdeviceptr a_ptr, CUdeviceptr b_ptr, CUdeviceptr c_ptr,
              CUdeviceptr workspace, size_t workspace_bytes) {
    const float alpha = 1.0f, beta = 0.0f;
    CUTUNE_CUBLASLT_CALL(lt_api().cublasLtMatmul(
        handle, desc, &alpha, reinterpret_cast<const void*>(b_ptr), first,
        reinterpret_cast<const void*>(a_ptr), second, &beta, reinterpret_cast<void*>(c_ptr), result,
        reinterpret_cast<void*>(c_ptr), result, &algos[size_t(index)].algo,
        reinterpret_cast<void*>(workspace), workspace_bytes, nullptr));
  }
};

std::string cublaslt_unavailable_reason() { return lt_api().usable ? "" : lt_api().reason; }

void cublaslt_descriptor_check(const SgemmShape& shape, GemmStorage input, GemmStorage output) {
  [[maybe_unused]] const CublasLtGemm descriptors(shape, input, output);
}

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

CublasLtLayouts cublaslt_layouts(const SgemmShape& shape) {
  const SgemmCall call = sgemm_call(shape);
  CublasLtLayouts l;
  l.trans_first = call.trans_a;
  // op(first) is call.m x call.k, stored transposed (call.k rows) when trans_a.
  l.first = {uint64_t(call.trans_a ? call.k : call.m), uint64_t(call.trans_a ? call.m : call.k),
             call.lda};
  l.second = {uint64_t(call.k), uint64_t(call.n), call.ldb};
  l.result = {uint64_t(call.m), uint64_t(call.n), call.ldc};
  return l;
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

CublasGemm::~CublasGemm() { release(); }

void CublasGemm::release() noexcept {
  lt_.reset();
  workspace_.release();
  if (handle_ != nullptr) api().cublasDestroy_v2(static_cast<cublasHandle_t>(handle_));
  handle_ = nullptr;
}

CublasGemm::CublasGemm(CublasGemm&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      lt_(std::move(other.lt_)),
      chosen_(std::move(other.chosen_)),
      lt_note_(std::move(other.lt_note_)),
      workspace_(std::move(other.workspace_)) {}

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
  if (chosen_.lt_index >= 0 && lt_ && lt_->shape == shape && lt_->input == input &&
      lt_->output == output) {
    lt_->matmul(chosen_.lt_index, a, b, c, workspace_.get(), workspace_.bytes());
    return;
  }
  const SgemmCall call = sgemm_call(shape);
  const float alpha = 1.0f, beta = 0.0f;
  auto type = cuda_type;
  // CUBLAS_COMPUTE_32F: fp32 accumulation (tensor cores for 16-bit inputs, never TF32 for fp32).
  CUTUNE_CUBLAS_CALL(api().cublasGemmEx(
      static_cast<cublasHandle_t>(handle_), call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, call.m, call.n, call.k, &alpha,
      reinterpret_cast<const void*>(b), type(input), call.lda, reinterpret_cast<const void*>(a),
      type(input), call.ldb, &beta, reinterpret_cast<void*>(c), type(output), call.ldc,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace cutune

namespace cutune {

void CublasGemm::choose(const CublasAlgoPerf& algo) {
  workspace_.reserve(algo.workspace_bytes);
  chosen_ = algo;
}

std::vector<CublasAlgoPerf> CublasGemm::find_gemm_ex(const SgemmShape& shape, GemmStorage input,
                                                     GemmStorage output, CUdeviceptr a,
                                                     CUdeviceptr b, CUdeviceptr c, int max_algos,
                                                     size_t max_workspace_bytes) {
  std::vector<CublasAlgoPerf> out;
  CublasAlgoPerf fallback;  // cublasGemmEx's default
  choose(fallback);
  fallback.time_s = mean_warm_seconds([&] { gemm_ex(shape, input, output, a, b, c); });
  out.push_back(fallback);
  lt_note_.clear();
  try {
    lt_ = std::make_unique<CublasLtGemm>(shape, input, output);
    lt_->find_algos(max_algos, max_workspace_bytes);
    if (lt_->algos.empty()) lt_note_ = "cuBLASLt offers no algorithm for the product";
  } catch (const CudaError& e) {
    lt_.reset();
    lt_note_ = fmt::format("cuBLASLt: {}", e.what());
  }
  for (size_t i = 0; lt_ && i < lt_->algos.size(); ++i) {
    CublasAlgoPerf r;
    r.lt_index = int(i);
    r.name = fmt::format("cuBLASLt heuristic {}", i);
    r.workspace_bytes = lt_->algos[i].workspaceSize;
    try {
      choose(r);
      r.time_s = mean_warm_seconds([&] { gemm_ex(shape, input, output, a, b, c); });
    } catch (const CudaError&) {
      r.ok = false;  // offered, but it did not run: not a baseline
    }
    out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const CublasAlgoPerf& l, const CublasAlgoPerf& r) {
    return l.ok != r.ok ? l.ok : l.time_s < r.time_s;
  });
  choose(out.front());
  return out;
}

}  // namespace cutune
