#pragma once
// Answers measurement requests from a ReplayTask's recorded results, standing in for the GPU
// when developing and testing search and the cost model.

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/replay/replay_space.h"

namespace cutune::replay {

// One answer. The lead adapts it to the tuner's MeasureResult.
struct ReplayMeasurement {
  bool valid = false;
  double time_ms = 0;            // the recorded mean, or with noise one drawn repetition
  std::vector<double> times_ms;  // every recorded repetition; with noise, the drawn one
  double compile_ms = 0;         // the recorded compile time, 0 when the cache has none
  std::string error;             // why invalid: the cache's failure string, "not in cache",
                                 // or the violated constraint
};

// Which of `repetitions` recorded times the noisy answer for (seed, config index, repetition)
// is: uniform over the seeds, and a function of its arguments alone.
size_t noise_draw(uint64_t seed, uint64_t config_index, uint64_t repetition, size_t repetitions);

class ReplayMeasurer {
 public:
  // With `noise`, each answer is one repetition drawn uniformly from the entry's `times` (the
  // mean when an entry has no repetitions). The draw is a hash of `seed`, the configuration's
  // index and how many times this measurer has answered that configuration before, not a
  // stream: the answers do not depend on which other configurations it answered or in what
  // order, so a suite's noisy answers are the same whichever MPI rank measured them. The task
  // must outlive this.
  explicit ReplayMeasurer(const ReplayTask& task, bool noise = false, uint64_t seed = 0);

  ReplayMeasurement measure(const Config& config);
  std::vector<ReplayMeasurement> measure(std::span<const Config> batch);

  uint64_t measurements() const { return count_; }  // answers given so far

 private:
  const ReplayTask& task_;
  bool noise_;
  uint64_t seed_;
  std::unordered_map<uint64_t, uint64_t> answered_;  // config index -> earlier noisy answers
  uint64_t count_ = 0;
};

}  // namespace cutune::replay
