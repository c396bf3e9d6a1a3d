#pragma once
// What the baselines' algorithm searches share (cuDNN's algorithms and graph plans, cuBLAS's
// GemmEx and cuBLASLt algorithms): each algorithm run warm, back to back, timed with CUDA
// events on the default stream; and one device workspace that grows to the largest an
// algorithm chosen so far needs.

#include <cuda.h>

#include <cstddef>
#include <functional>

namespace cutune {

// Runs `launch` `warmup` times (loading its modules, bringing the clocks up), then `runs` times
// between two CUDA events, and returns the mean seconds a run. CudaError from the driver or
// from `launch`.
double mean_warm_seconds(const std::function<void()>& launch, int warmup = 3, int runs = 10);

// Device memory that only grows. Move-only; the destructor never throws.
class DeviceWorkspace {
 public:
  DeviceWorkspace() = default;
  ~DeviceWorkspace();
  DeviceWorkspace(DeviceWorkspace&& other) noexcept;
  DeviceWorkspace& operator=(DeviceWorkspace&& other) noexcept;
  DeviceWorkspace(const DeviceWorkspace&) = delete;
  DeviceWorkspace& operator=(const DeviceWorkspace&) = delete;

  // At least `bytes` (freed and allocated anew when larger than now); CudaError on failure.
  void reserve(size_t bytes);
  void release() noexcept;
  CUdeviceptr get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace cutune
