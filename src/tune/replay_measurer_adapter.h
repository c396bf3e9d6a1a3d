#pragma once
// A Measurer that answers from a replayed cache (replay::ReplayMeasurer) instead of a GPU, so
// that search, logs, resume and transfer run without one.
//
// Each answer becomes a MeasureResult: a measured configuration is `ok` with one time, the
// replayed answer in seconds (the recorded mean, or with noise one drawn repetition), timer
// `replay`; anything else (a failure string of the cache, "not in cache", a violated
// constraint) is `invalid` with that reason as its error.

#include <cstdint>
#include <string>
#include <vector>

#include "src/replay/replay_measurer.h"
#include "src/replay/replay_space.h"
#include "src/tune/measurer.h"

namespace cutune {

MeasureResult to_measure_result(const replay::ReplayMeasurement& measurement);

class ReplayMeasurerAdapter : public Measurer {
 public:
  // The task must outlive the adapter.
  explicit ReplayMeasurerAdapter(const replay::ReplayTask& task, bool noise = false,
                                 uint64_t seed = 0);

  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override;
  std::string device_name() const override;
  std::string target_arch() const override { return "replay"; }

 private:
  const replay::ReplayTask& task_;
  replay::ReplayMeasurer measurer_;
};

}  // namespace cutune
