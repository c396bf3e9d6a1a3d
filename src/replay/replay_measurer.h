#pragma once
// Answers measurement requests from a ReplayTask's recorded results, standing in for the GPU
// when developing and testing search and the cost model.

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "src/replay/replay_space.h"

namespace cutune::replay {

// One answer. The lead adapts it to the tuner's MeasureResult.
struct ReplayMeasurement {
  bool valid = false;
  double time_ms = 0;            // the recorded mean, or with noise one drawn repetition
  std::vector<double> times_ms;  // every recorded repetition; with noise, the drawn one
  std::string error;             // why invalid: the cache's failure string, "not in cache",
                                 // or the violated constraint
};

class ReplayMeasurer {
 public:
  // With `noise`, each answer is one repetition drawn uniformly from the entry's `times`
  // (seeded by `seed`; the mean when an entry has no repetitions). The task must outlive this.
  explicit ReplayMeasurer(const ReplayTask& task, bool noise = false, uint64_t seed = 0);

  ReplayMeasurement measure(const Config& config);
  std::vector<ReplayMeasurement> measure(std::span<const Config> batch);

  uint64_t measurements() const { return count_; }  // answers given so far

 private:
  const ReplayTask& task_;
  bool noise_;
  std::mt19937_64 rng_;
  uint64_t count_ = 0;
};

}  // namespace cutune::replay
