#include "src/tune/prior_margin.h"

namespace cutune {

std::shared_ptr<const PriorMargin> make_prior_margin(const cost_model::FeatureExtractor& features,
                                                     const DeviceInfo& device,
                                                     const std::string& family) {
  std::unique_ptr<cost_model::AnalyticalPrior> prior =
      cost_model::make_analytical_prior(features, cost_model::prior_target(device, family));
  if (!prior) return nullptr;
  return std::make_shared<const PriorMargin>(std::move(*prior));
}

}  // namespace cutune
