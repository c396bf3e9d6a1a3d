#pragma once
// Check macros for the CUDA libraries. Each evaluates `call` once and, when it does not
// return the library's success value, throws a CudaError whose one-line message holds
// file:line, the call as written and the library's own name and description of the status.
//
// CUTUNE_NVRTC_CHECK and CUTUNE_CU_CHECK work with this header alone. The CUPTI, cuBLAS and
// cuDNN macros name that library's message functions, so the file that uses them includes
// the library's header and links the library; this header drags none of them in.
//
// These are for calls whose failure means the environment or our code is broken. A candidate
// kernel that fails to compile, load or run is data: the code that handles candidates catches
// CudaError (code() tells what happened) and records a status instead of ending the run.

#include <cuda.h>
#include <nvrtc.h>

#include <stdexcept>
#include <string>

namespace cutune {

class CudaError : public std::runtime_error {
 public:
  // `library` names the API ("NVRTC", "CUDA driver", "cuBLAS", ...); `code` is the raw status.
  CudaError(std::string library, int code, std::string call, std::string description,
            const char* file, int line);

  const std::string& library() const { return library_; }
  int code() const { return code_; }
  const std::string& call() const { return call_; }
  const std::string& description() const { return description_; }

 private:
  std::string library_;
  int code_;
  std::string call_;
  std::string description_;
};

[[noreturn]] void throw_cuda_error(const char* library, int code, const char* call,
                                   std::string description, const char* file, int line);

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" through the loaded driver; without a driver
// just the number, since the names live in libcuda.
std::string driver_error_text(CUresult result);

// "NVRTC_ERROR_COMPILATION" through the loaded NVRTC; the number when NVRTC is not loaded.
std::string nvrtc_error_text(nvrtcResult result);

}  // namespace cutune

#define CUTUNE_NVRTC_CHECK(call)                                                                  \
  do {                                                                                            \
    const nvrtcResult cutune_status_ = (call);                                                    \
    if (cutune_status_ != NVRTC_SUCCESS)                                                          \
      ::cutune::throw_cuda_error("NVRTC", static_cast<int>(cutune_status_), #call,                \
                                 ::cutune::nvrtc_error_text(cutune_status_), __FILE__, __LINE__); \
  } while (0)

#define CUTUNE_CU_CHECK(call)                                                                      \
  do {                                                                                             \
    const CUresult cutune_status_ = (call);                                                        \
    if (cutune_status_ != CUDA_SUCCESS)                                                            \
      ::cutune::throw_cuda_error("CUDA driver", static_cast<int>(cutune_status_), #call,           \
                                 ::cutune::driver_error_text(cutune_status_), __FILE__, __LINE__); \
  } while (0)

// Needs <cupti.h> and CUDA::cupti where used.
#define CUTUNE_CUPTI_CHECK(call)                                                                 \
  do {                                                                                           \
    const auto cutune_status_ = (call);                                                          \
    if (cutune_status_ != CUPTI_SUCCESS) {                                                       \
      const char* cutune_text_ = nullptr;                                                        \
      if (cuptiGetResultString(cutune_status_, &cutune_text_) != CUPTI_SUCCESS)                  \
        cutune_text_ = nullptr;                                                                  \
      ::cutune::throw_cuda_error("CUPTI", static_cast<int>(cutune_status_), #call,               \
                                 cutune_text_ ? cutune_text_ : "unknown CUPTI status", __FILE__, \
                                 __LINE__);                                                      \
    }                                                                                            \
  } while (0)

// Needs <cublas_v2.h> and CUDA::cublas where used.
#define CUTUNE_CUBLAS_CHECK(call)                                                          \
  do {                                                                                     \
    const auto cutune_status_ = (call);                                                    \
    if (cutune_status_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::cutune::throw_cuda_error("cuBLAS", static_cast<int>(cutune_status_), #call,        \
                                 std::string(cublasGetStatusName(cutune_status_)) + " (" + \
                                     cublasGetStatusString(cutune_status_) + ")",          \
                                 __FILE__, __LINE__);                                      \
  } while (0)

// Needs <cudnn.h> and the cuDNN library where used.
#define CUTUNE_CUDNN_CHECK(call)                                                           \
  do {                                                                                     \
    const auto cutune_status_ = (call);                                                    \
    if (cutune_status_ != CUDNN_STATUS_SUCCESS)                                            \
      ::cutune::throw_cuda_error("cuDNN", static_cast<int>(cutune_status_), #call,         \
                                 cudnnGetErrorString(cutune_status_), __FILE__, __LINE__); \
  } while (0)
