#include "src/baselines/warm_timing.h"

#include <memory>

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

}  // namespace cutune
