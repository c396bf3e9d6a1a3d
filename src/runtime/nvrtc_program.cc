#include "src/runtime/nvrtc_program.h"

#include <fmt/format.h>

#include <utility>

#include "src/runtime/cuda_check.h"

namespace cutune {

NvrtcProgram::NvrtcProgram(const std::string& code, const std::string& name) {
  CUTUNE_NVRTC_CHECK(
      nvrtcCreateProgram(&program_, code.c_str(), name.c_str(), 0, nullptr, nullptr));
}

NvrtcProgram::~NvrtcProgram() {
  if (program_ != nullptr) nvrtcDestroyProgram(&program_);
}

NvrtcProgram::NvrtcProgram(NvrtcProgram&& other) noexcept
    : program_(std::exchange(other.program_, nullptr)) {}

NvrtcProgram& NvrtcProgram::operator=(NvrtcProgram&& other) noexcept {
  if (this != &other) {
    if (program_ != nullptr) nvrtcDestroyProgram(&program_);
    program_ = std::exchange(other.program_, nullptr);
  }
  return *this;
}

nvrtcResult NvrtcProgram::compile(const std::vector<std::string>& options) {
  std::vector<const char*> pointers;
  pointers.reserve(options.size());
  for (const std::string& option : options) pointers.push_back(option.c_str());
  return nvrtcCompileProgram(program_, static_cast<int>(pointers.size()), pointers.data());
}

std::string NvrtcProgram::log() const {
  size_t size = 0;
  CUTUNE_NVRTC_CHECK(nvrtcGetProgramLogSize(program_, &size));
  std::string log(size, '\0');
  if (size > 0) CUTUNE_NVRTC_CHECK(nvrtcGetProgramLog(program_, log.data()));
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

std::vector<char> NvrtcProgram::cubin() const {
  size_t size = 0;
  if (nvrtcGetCUBINSize(program_, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::vector<char> image(size);
  CUTUNE_NVRTC_CHECK(nvrtcGetCUBIN(program_, image.data()));
  return image;
}

std::string nvrtc_version_string() {
  int major = 0, minor = 0;
  CUTUNE_NVRTC_CHECK(nvrtcVersion(&major, &minor));
  return fmt::format("{}.{}", major, minor);
}

std::vector<int> nvrtc_supported_archs() {
  int count = 0;
  CUTUNE_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&count));
  std::vector<int> archs(static_cast<size_t>(count));
  if (count > 0) CUTUNE_NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()));
  return archs;
}

}  // namespace cutune
