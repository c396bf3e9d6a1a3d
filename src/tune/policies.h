#pragma once
// One place that turns a tuner's name into a policy, for the command line and benchmarks.

#include <memory>

#include "cost_model/features.h"
#include "src/tune/model/model_policy.h"
#include "src/tune/search_policy.h"

namespace cutune {

// `features` (which must outlive the policy) is needed by TunerKind::xgb only; `model` applies
// to it alone.
std::unique_ptr<SearchPolicy> make_search_policy(TunerKind kind, const ConfigSpace& space,
                                                 const cost_model::FeatureExtractor* features,
                                                 const ModelPolicyOptions& model = {});

}  // namespace cutune
