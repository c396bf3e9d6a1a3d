#pragma once
// The analytical prior (cost_model/analytical_prior.h) as the model-based search's margin
// source: a never-measured task's first batch is annealed on the prior's estimates instead of
// drawn at random, and its rankers then fit on top of the prior's scores, weighted
//
//   w(n) = 1 / (1 + n / half_weight_at)
//
// for n records of the task, so that its own measurements take over (w = 1/2 at 32 records by
// default: half the transfer model's, since the prior knows no measurement at all).

#include <memory>
#include <string>

#include "cost_model/analytical_prior.h"
#include "src/tune/margin_source.h"

namespace cutune {

class PriorMargin final : public MarginSource {
 public:
  explicit PriorMargin(cost_model::AnalyticalPrior prior, double half_weight_at = 32)
      : prior_(std::move(prior)), half_weight_at_(half_weight_at) {}

  std::vector<float> predict(const cost_model::FeatureMatrix& x) const override {
    return prior_.score(x);
  }
  double weight(int local_measurements) const override {
    return fading_weight(local_measurements, half_weight_at_);
  }
  const cost_model::AnalyticalPrior& prior() const { return prior_; }

 private:
  cost_model::AnalyticalPrior prior_;
  double half_weight_at_;
};

// The prior of a template task's features on `device` for its instruction family ("simt",
// "mma", "wgmma"); null when the features are not IR features.
std::shared_ptr<const PriorMargin> make_prior_margin(const cost_model::FeatureExtractor& features,
                                                     const DeviceInfo& device,
                                                     const std::string& family);

}  // namespace cutune
