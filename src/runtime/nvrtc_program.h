#pragma once
// NVRTC, loaded at run time like the driver (src/runtime/dynamic_library.h finds it), and a
// move-only owner of one nvrtcProgram. <nvrtc.h> gives the types only: each entry of NvrtcApi
// is typed as the toolkit declares the function and resolved by its exported name.
//
// Creating an NvrtcProgram never compiles; compile() returns NVRTC's status so the caller
// decides whether a failure is the candidate's (NVRTC_ERROR_COMPILATION) or ours. The
// destructor never throws.

#include <nvrtc.h>

#include <string>
#include <vector>

// One entry per NVRTC function cutune calls.
#define CUTUNE_NVRTC_FUNCTIONS(X) \
  X(nvrtcVersion)                 \
  X(nvrtcGetErrorString)          \
  X(nvrtcGetNumSupportedArchs)    \
  X(nvrtcGetSupportedArchs)       \
  X(nvrtcCreateProgram)           \
  X(nvrtcDestroyProgram)          \
  X(nvrtcCompileProgram)          \
  X(nvrtcGetProgramLogSize)       \
  X(nvrtcGetProgramLog)           \
  X(nvrtcGetCUBINSize)            \
  X(nvrtcGetCUBIN)                \
  X(nvrtcAddNameExpression)       \
  X(nvrtcGetLoweredName)

namespace cutune {

// Every pointer is non-null in the table nvrtc() returns.
struct NvrtcApi {
#define CUTUNE_NVRTC_ENTRY(name) decltype(&::name) name = nullptr;
  CUTUNE_NVRTC_FUNCTIONS(CUTUNE_NVRTC_ENTRY)
#undef CUTUNE_NVRTC_ENTRY
};

// The loaded NVRTC (once per process, thread-safe), or nullptr with the one-line reason.
const NvrtcApi* nvrtc_api();
std::string nvrtc_unavailable_reason();

// The loaded NVRTC; throws MissingLibraryError ("NVRTC is missing: ...") otherwise.
const NvrtcApi& nvrtc();

class NvrtcProgram {
 public:
  // `name` is the file name NVRTC uses in diagnostics. Throws CudaError if NVRTC refuses.
  NvrtcProgram(const std::string& code, const std::string& name);
  ~NvrtcProgram();
  NvrtcProgram(NvrtcProgram&& other) noexcept;
  NvrtcProgram& operator=(NvrtcProgram&& other) noexcept;
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;

  nvrtcResult compile(const std::vector<std::string>& options);
  std::string log() const;
  std::vector<char> cubin() const;  // empty when compiled to PTX only or not compiled
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_ = nullptr;
};

// "13.0", from nvrtcVersion.
std::string nvrtc_version_string();

// The real architectures this NVRTC can emit cubins for, as numbers (90 for sm_90).
std::vector<int> nvrtc_supported_archs();

}  // namespace cutune
