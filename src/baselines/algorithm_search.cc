#include "src/baselines/algorithm_search.h"

#include <memory>
#include <utility>

#include "src/runtime/cuda_check.h"
#include "src/runtime/driver_api.h"

namespace cutune {

double mean_warm_seconds(const std::function<void()>& launch, int warmup, int runs) {
  const DriverApi& driver = require_driver();
  for (int i = 0; i < warmup; ++i) launch();
  const auto event = [&driver] {  // destroyed on every path out
    CUevent e = nullptr;
    CUTUNE_CU_CHECK(driver.cuEventCreate(&e, 0));
    return std::unique_ptr<CUevent_st, decltype(driver.cuEventDestroy_v2)>(
        e, driver.cuEventDestroy_v2);
  };
  const auto start = event(), stop = event();
  CUTUNE_CU_CHECK(driver.cuEventRecord(start.get(), nullptr));
  for (int i = 0; i < runs; ++i) launch();
  CUTUNE_CU_CHECK(driver.cuEventRecord(stop.get(), nullptr));
  CUTUNE_CU_CHECK(driver.cuEventSynchronize(stop.get()));
  float ms = 0;
  CUTUNE_CU_CHECK(driver.cuEventElapsedTime(&ms, start.get(), stop.get()));
  return double(ms) * 1e-3 / runs;
}

DeviceWorkspace::~DeviceWorkspace() { release(); }

DeviceWorkspace::DeviceWorkspace(DeviceWorkspace&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceWorkspace& DeviceWorkspace::operator=(DeviceWorkspace&& other) noexcept {
  std::swap(ptr_, other.ptr_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

void DeviceWorkspace::reserve(size_t bytes) {
  if (bytes <= bytes_) return;
  const DriverApi& driver = require_driver();
  release();
  CUTUNE_CU_CHECK(driver.cuMemAlloc_v2(&ptr_, bytes));
  bytes_ = bytes;
}

void DeviceWorkspace::release() noexcept {
  if (ptr_ != 0) {
    if (const DriverApi* d = driver_api()) d->cuMemFree_v2(ptr_);
  }
  ptr_ = 0;
  bytes_ = 0;
}

}  // namespace cutune
