#include "src/runtime/nvrtc_program.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <mutex>
#include <utility>

#include "src/runtime/cuda_check.h"
#include "src/runtime/dynamic_library.h"

namespace cutune {

namespace {

struct NvrtcState {
  NvrtcApi api;
  bool usable = false;
  std::string reason;

  void resolve(void* library, std::string& missing) {
#define CUTUNE_NVRTC_RESOLVE(name) resolve_symbol(library, #name, api.name, missing);
    CUTUNE_NVRTC_FUNCTIONS(CUTUNE_NVRTC_RESOLVE)
#undef CUTUNE_NVRTC_RESOLVE
  }
};

const NvrtcState& state() { return loaded_table<NvrtcState>(CudaLibrary::nvrtc, "libnvrtc"); }

}  // namespace

const NvrtcApi* nvrtc_api() { return state().usable ? &state().api : nullptr; }

std::string nvrtc_unavailable_reason() { return state().usable ? "" : state().reason; }

const NvrtcApi& nvrtc() {
  if (!state().usable) throw MissingLibraryError("NVRTC is missing: " + state().reason);
  return state().api;
}

std::string nvrtc_error_text(nvrtcResult result) {
  if (const NvrtcApi* api = nvrtc_api())
    if (const char* text = api->nvrtcGetErrorString(result)) return text;
  return "nvrtcResult " + std::to_string(static_cast<int>(result));
}

NvrtcProgram::NvrtcProgram(const std::string& code, const std::string& name) {
  CUTUNE_NVRTC_CHECK(
      nvrtc().nvrtcCreateProgram(&program_, code.c_str(), name.c_str(), 0, nullptr, nullptr));
}

NvrtcProgram::~NvrtcProgram() {
  if (program_ != nullptr) nvrtc().nvrtcDestroyProgram(&program_);
}

NvrtcProgram::NvrtcProgram(NvrtcProgram&& other) noexcept
    : program_(std::exchange(other.program_, nullptr)) {}

NvrtcProgram& NvrtcProgram::operator=(NvrtcProgram&& other) noexcept {
  if (this != &other) {
    if (program_ != nullptr) nvrtc().nvrtcDestroyProgram(&program_);
    program_ = std::exchange(other.program_, nullptr);
  }
  return *this;
}

nvrtcResult NvrtcProgram::compile(const std::vector<std::string>& options) {
  std::vector<const char*> pointers;
  pointers.reserve(options.size());
  for (const std::string& option : options) pointers.push_back(option.c_str());
  return nvrtc().nvrtcCompileProgram(program_, static_cast<int>(pointers.size()), pointers.data());
}

std::string NvrtcProgram::log() const {
  size_t size = 0;
  CUTUNE_NVRTC_CHECK(nvrtc().nvrtcGetProgramLogSize(program_, &size));
  std::string log(size, '\0');
  if (size > 0) CUTUNE_NVRTC_CHECK(nvrtc().nvrtcGetProgramLog(program_, log.data()));
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

std::vector<char> NvrtcProgram::cubin() const {
  size_t size = 0;
  if (nvrtc().nvrtcGetCUBINSize(program_, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::vector<char> image(size);
  CUTUNE_NVRTC_CHECK(nvrtc().nvrtcGetCUBIN(program_, image.data()));
  return image;
}

std::string nvrtc_version_string() {
  int major = 0, minor = 0;
  CUTUNE_NVRTC_CHECK(nvrtc().nvrtcVersion(&major, &minor));
  return fmt::format("{}.{}", major, minor);
}

std::vector<int> nvrtc_supported_archs() {
  int count = 0;
  CUTUNE_NVRTC_CHECK(nvrtc().nvrtcGetNumSupportedArchs(&count));
  std::vector<int> archs(static_cast<size_t>(count));
  if (count > 0) CUTUNE_NVRTC_CHECK(nvrtc().nvrtcGetSupportedArchs(archs.data()));
  return archs;
}

}  // namespace cutune
