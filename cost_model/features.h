#pragma once
// Feature extraction: a configuration of a space becomes a fixed-length float vector for the
// cost model. Each extractor has a schema string (name and version, and what it was built
// for) and a length fixed by construction; a model trained on one schema is refused for
// another (see RankModel::load).

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/space/config_space.h"

namespace cutune {
class Template;
namespace ir {
struct TargetLimits;
}
}  // namespace cutune

namespace cutune::cost_model {

class FeatureExtractor {
 public:
  virtual ~FeatureExtractor() = default;
  virtual std::string schema() const = 0;
  virtual int size() const = 0;
  // Fills out[0, size()). Safe to call from several threads at once.
  virtual void extract(const Config& config, std::span<float> out) const = 0;
  // Optional names of the features, for reports (empty strings where unnamed).
  virtual std::vector<std::string> names() const { return std::vector<std::string>(size()); }
};

// The raw knob values (split factors each as a feature, log2-scaled where positive), for
// spaces with no IR, such as replayed caches.
std::unique_ptr<FeatureExtractor> make_knob_features(const ConfigSpace& space);

// Features of the configuration's loop-nest IR (loops, buffer accesses, kernel totals), for
// templates. The schema names the template, so models transfer between shapes of one
// template but not between templates.
std::unique_ptr<FeatureExtractor> make_ir_features(const Template& tmpl,
                                                   const ir::TargetLimits& limits);

}  // namespace cutune::cost_model
