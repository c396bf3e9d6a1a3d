#pragma once
// Move-only owner of one nvrtcProgram. Creating it never compiles; compile() returns NVRTC's
// status so the caller decides whether a failure is the candidate's (NVRTC_ERROR_COMPILATION)
// or ours. The destructor never throws.

#include <nvrtc.h>

#include <string>
#include <vector>

namespace cutune {

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
