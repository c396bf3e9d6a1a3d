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

#include "src/records/record.h"
#include "src/replay/replay_measurer.h"
#include "src/replay/replay_space.h"
#include "src/measure/measurer.h"

namespace cutune {

MeasureResult to_measure_result(const replay::ReplayMeasurement& measurement);

// The task key of a replayed cache: operator and template = the cache's kernel name, shape =
// its problem size, target "replay", device = the cache's device name.
TaskKey replay_task_key(const replay::ReplayTask& task);

// Every configuration of the task's space that the cache holds, as the records a tuning run
// measuring all of them would have written (failed entries as `invalid`), in index order: a
// cache is a complete log of its task, for transfer learning.
std::vector<Record> cache_records(const replay::ReplayTask& task);

class ReplayMeasurerAdapter : public Measurer {
 public:
  // The task must outlive the adapter. With cost_ms > 0 every configuration answered takes
  // that many milliseconds of wall time (a sleep, not work), so that scaling over many
  // measuring processes can be studied on one machine (--replay-cost-ms).
  explicit ReplayMeasurerAdapter(const replay::ReplayTask& task, bool noise = false,
                                 uint64_t seed = 0, double cost_ms = 0);

  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override;
  // Each answer is handed over as soon as it is given (after its cost_ms).
  std::vector<MeasureResult> measure_streaming(const std::vector<Config>& batch,
                                               const ResultSink& on_result) override;
  std::string device_name() const override;
  std::string target_arch() const override { return "replay"; }

 private:
  const replay::ReplayTask& task_;
  replay::ReplayMeasurer measurer_;
  double cost_ms_;
};

}  // namespace cutune
