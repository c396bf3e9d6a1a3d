#include "src/tune/policies.h"

#include <stdexcept>

namespace cutune {

std::unique_ptr<SearchPolicy> make_search_policy(TunerKind kind, const ConfigSpace& space,
                                                 const cost_model::FeatureExtractor* features,
                                                 const ModelPolicyOptions& model) {
  switch (kind) {
    case TunerKind::random:
      return make_random_policy(space);
    case TunerKind::grid:
      return make_grid_policy(space);
    case TunerKind::genetic:
      return make_genetic_policy(space);
    case TunerKind::xgb:
      if (features == nullptr) throw std::logic_error("the xgb tuner needs a feature extractor");
      return make_model_policy(space, *features, model);
  }
  throw std::logic_error("unknown TunerKind");
}

}  // namespace cutune
