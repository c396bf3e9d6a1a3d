#pragma once
// What the model-based search (src/tune/model/) knows of a task's configurations before its own
// measurements: scores it adds, weighted, as the base margin of its rankers, and ranks by alone
// before the first fit. Two sources: a transfer model trained on records of other tasks
// (transfer_model.h), and the analytical prior of a template's IR features (prior_margin.h).
// The weight fades as the task's own measurements accumulate, so that they correct it.

#include <vector>

#include "cost_model/rank_model.h"

namespace cutune {

class MarginSource {
 public:
  virtual ~MarginSource() = default;
  // Scores of the rows of x (higher: faster); safe to call from several threads at once.
  virtual std::vector<float> predict(const cost_model::FeatureMatrix& x) const = 0;
  // The scores' weight once the task has `local_measurements` records, in (0, 1].
  virtual double weight(int local_measurements) const = 0;
};

// The weight both sources fade by: 1 / (1 + n / half_weight_at), a half at half_weight_at
// local measurements.
inline double fading_weight(int local_measurements, double half_weight_at) {
  return 1.0 / (1.0 + local_measurements / half_weight_at);
}

}  // namespace cutune
