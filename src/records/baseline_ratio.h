#pragma once
// The summary of a suite against its library baseline (cuDNN, cuBLAS): the ratio
// baseline time / tuned time of every task that has both, their geometric mean and median, and
// how many tasks that covers out of how many there are, so that a summary never silently
// averages only some of them.

#include <optional>
#include <vector>

namespace cutune {

struct BaselineRatios {
  std::vector<double> ratios;     // baseline / tuned, tasks with both times, in input order
  std::optional<double> geomean;  // nullopt when no task has both
  std::optional<double> median;
  int counted = 0;  // tasks with both times
  int total = 0;    // tasks given
};

// `baseline_s[i]` and `tuned_s[i]`: task i's median times in seconds, when known (positive
// and finite, else the task is not counted). The two lists have the same length.
BaselineRatios baseline_ratios(const std::vector<std::optional<double>>& baseline_s,
                               const std::vector<std::optional<double>>& tuned_s);

}  // namespace cutune
