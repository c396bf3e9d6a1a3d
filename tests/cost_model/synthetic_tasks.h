#pragma once
// Synthetic tuning tasks for the cost-model tests: throughput is a smooth nonlinear function
// of six features with interactions, plus noise, plus uninformative columns; a corner of the
// space fails (throughput 0). Labels follow the model's convention (best of the task = 1).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cost_model/rank_model.h"

namespace cutune::cost_model::testing {

constexpr int kInformativeColumns = 6;

struct SyntheticTask {
  FeatureMatrix x;
  std::vector<float> labels;
};

// shift changes the task's optimum so that related tasks differ (for transfer learning).
inline SyntheticTask make_task(int rows, int cols, uint64_t seed, double shift = 0.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::normal_distribution<double> noise(0.0, 0.05);
  SyntheticTask task{FeatureMatrix::zeros(rows, cols), std::vector<float>(rows)};
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) task.x.at(r, c) = uniform(rng);
    auto f = [&](int c) { return static_cast<double>(task.x.at(r, c)); };
    double log_throughput = std::sin(3.0 * f(0) + shift) * (1.0 + f(1)) + 2.0 * f(2) * f(3) -
                            4.0 * (f(4) - 0.5 - 0.3 * shift) * (f(4) - 0.5 - 0.3 * shift) +
                            0.5 * f(5) * f(0) + noise(rng);
    bool failed = f(4) > 0.92 && f(5) > 0.5;
    task.labels[r] = failed ? 0.0f : static_cast<float>(std::exp(log_throughput));
  }
  float best = *std::max_element(task.labels.begin(), task.labels.end());
  for (float& label : task.labels) label /= best;
  return task;
}

}  // namespace cutune::cost_model::testing
