#pragma once
// A measurer answers a batch of configurations with one result each, in order. Behind it:
// replayed measurements (a cache of real timings), or the GPU (compile, run, time, check).
// A configuration that fails in any way is a result with its status, never an exception.

#include <string>
#include <vector>

#include "src/records/measure_result.h"
#include "src/space/config_space.h"

namespace cutune {

class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual std::vector<MeasureResult> measure(const std::vector<Config>& batch) = 0;
  virtual std::string device_name() const = 0;
  virtual std::string target_arch() const = 0;
};

}  // namespace cutune
