#pragma once
// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that cutune builds,
// links and runs its CPU-side work on machines without a GPU or a driver. <cuda.h> is used
// for types only: each entry of DriverApi is a pointer typed as the toolkit declares the
// function, resolved by its exact exported symbol (the _v2 names where the toolkit maps to them).
//
// The library is loaded and cuInit(0) called once per process, on first use, thread-safely;
// it is never unloaded.

#include <cuda.h>

#include <stdexcept>
#include <string>

// One entry per driver function cutune calls. Adding a function is one line here.
#define CUTUNE_DRIVER_FUNCTIONS(X)               \
  X(cuInit)                                      \
  X(cuDriverGetVersion)                          \
  X(cuGetErrorName)                              \
  X(cuGetErrorString)                            \
  X(cuDeviceGetCount)                            \
  X(cuDeviceGet)                                 \
  X(cuDeviceGetName)                             \
  X(cuDeviceGetAttribute)                        \
  X(cuDeviceTotalMem_v2)                         \
  X(cuDevicePrimaryCtxRetain)                    \
  X(cuDevicePrimaryCtxRelease_v2)                \
  X(cuCtxSetCurrent)                             \
  X(cuCtxSynchronize)                            \
  X(cuModuleLoadData)                            \
  X(cuModuleUnload)                              \
  X(cuModuleGetFunction)                         \
  X(cuModuleGetGlobal_v2)                        \
  X(cuFuncSetAttribute)                          \
  X(cuFuncGetAttribute)                          \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuLaunchKernel)                              \
  X(cuMemAlloc_v2)                               \
  X(cuMemFree_v2)                                \
  X(cuMemcpyHtoD_v2)                             \
  X(cuMemcpyDtoH_v2)                             \
  X(cuMemsetD8_v2)                               \
  X(cuEventCreate)                               \
  X(cuEventRecord)                               \
  X(cuEventSynchronize)                          \
  X(cuEventElapsedTime)                          \
  X(cuEventDestroy_v2)                           \
  X(cuStreamSynchronize)                         \
  X(cuMemsetD32Async)                            \
  X(cuDeviceGetPCIBusId)                         \
  X(cuTensorMapEncodeTiled)

namespace cutune {

// Every pointer is non-null in a DriverApi handed out by driver_api().
struct DriverApi {
#define CUTUNE_DRIVER_ENTRY(name) decltype(&::name) name = nullptr;
  CUTUNE_DRIVER_FUNCTIONS(CUTUNE_DRIVER_ENTRY)
#undef CUTUNE_DRIVER_ENTRY
  int driver_version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
  int device_count = 0;    // > 0
};

// Thrown by require_driver(). what() is one line: "no CUDA device found: <reason>".
class NoDeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The driver when libcuda.so.1 loads, every function resolves, cuInit succeeds and at least
// one device exists; nullptr otherwise.
const DriverApi* driver_api();

// Why driver_api() is nullptr, in one line ("" when it is not).
std::string driver_unavailable_reason();

// The driver, or a NoDeviceError naming the reason.
const DriverApi& require_driver();

// The function table whenever libcuda.so.1 loaded and resolved, even if cuInit failed or no
// device exists; nullptr otherwise. Only for naming error codes.
const DriverApi* loaded_driver_library();

}  // namespace cutune
