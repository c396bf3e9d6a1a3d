#pragma once
// Move-only owners of driver objects: a device's primary context, a loaded module, a device
// buffer. Constructors throw CudaError (or NoDeviceError without a driver); destructors
// never throw. The caller makes the context current on its thread before creating modules
// or buffers (PrimaryContext::make_current), as the driver requires, and destroys modules
// and buffers before the context that holds them.

#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/runtime/compile_result.h"

namespace cutune {

class PrimaryContext {
 public:
  explicit PrimaryContext(int ordinal = 0);
  ~PrimaryContext();
  PrimaryContext(PrimaryContext&& other) noexcept;
  PrimaryContext& operator=(PrimaryContext&&) = delete;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;

  void make_current() const;
  CUcontext get() const { return context_; }
  CUdevice device() const { return device_; }

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

class Module {
 public:
  // Loads a cubin into the current context.
  explicit Module(const Cubin& cubin);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel `name`, allowed `dynamic_smem_bytes` of dynamic shared memory. This is the
  // one place that performs the opt-in needed above 48 KiB.
  CUfunction function(const std::string& name, uint32_t dynamic_smem_bytes = 0) const;
  CUmodule get() const { return module_; }

 private:
  CUmodule module_ = nullptr;
};

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr get() const { return pointer_; }
  size_t bytes() const { return bytes_; }
  // Synchronous copies of exactly bytes() bytes.
  void upload(const void* host);
  void download(void* host) const;
  void fill_bytes(unsigned char value);

 private:
  CUdeviceptr pointer_ = 0;
  size_t bytes_ = 0;
};

// Launches `function` with the grid, block and dynamic shared memory of `launch`.
// `args` holds one pointer per kernel parameter, pointing at the parameter's value.
void launch_kernel(CUfunction function, const LaunchSpec& launch, void** args,
                   CUstream stream = nullptr);

}  // namespace cutune
