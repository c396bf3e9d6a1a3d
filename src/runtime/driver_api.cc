#include "src/runtime/driver_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>

#include "src/runtime/dynamic_library.h"

namespace cutune {

namespace {

constexpr const char* kLibraryName = "libcuda.so.1";

struct DriverState {
  DriverApi api;
  bool library_loaded = false;
  bool usable = false;
  std::string reason;
};

std::string describe(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr)
    return fmt::format("CUresult {}", static_cast<int>(result));
  return name;
}

DriverState load() {
  DriverState state;
  void* library = open_cuda_library(CudaLibrary::driver, &state.reason);
  if (library == nullptr) return state;
  // Deliberately never dlclose'd: modules and contexts may outlive any owner we could pick.
  std::string missing;
#define CUTUNE_DRIVER_RESOLVE(name)                                                   \
  state.api.name = reinterpret_cast<decltype(state.api.name)>(dlsym(library, #name)); \
  if (state.api.name == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  CUTUNE_DRIVER_FUNCTIONS(CUTUNE_DRIVER_RESOLVE)
#undef CUTUNE_DRIVER_RESOLVE
  if (!missing.empty()) {
    state.reason = fmt::format("{} lacks {} (driver too old?)", kLibraryName, missing);
    return state;
  }
  state.library_loaded = true;

  if (CUresult r = state.api.cuInit(0); r != CUDA_SUCCESS) {
    state.reason = fmt::format("cuInit failed with {}", describe(state.api, r));
    return state;
  }
  if (CUresult r = state.api.cuDriverGetVersion(&state.api.driver_version); r != CUDA_SUCCESS) {
    state.reason = fmt::format("cuDriverGetVersion failed with {}", describe(state.api, r));
    return state;
  }
  if (CUresult r = state.api.cuDeviceGetCount(&state.api.device_count); r != CUDA_SUCCESS) {
    state.reason = fmt::format("cuDeviceGetCount failed with {}", describe(state.api, r));
    return state;
  }
  if (state.api.device_count <= 0) {
    state.reason = "the driver reports no devices";
    return state;
  }
  state.usable = true;
  return state;
}

const DriverState& state() {
  static const DriverState kState = load();
  return kState;
}

}  // namespace

const DriverApi* driver_api() { return state().usable ? &state().api : nullptr; }

std::string driver_unavailable_reason() { return state().usable ? "" : state().reason; }

const DriverApi& require_driver() {
  if (const DriverApi* api = driver_api()) return *api;
  throw NoDeviceError("no CUDA device found: " + driver_unavailable_reason());
}

const DriverApi* loaded_driver_library() { return state().library_loaded ? &state().api : nullptr; }

}  // namespace cutune
