#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cost_model/features.h"

namespace cutune::cost_model {

namespace {

// Knob values are powers of two or small enumerations; log2(1 + v) keeps tile sizes on the
// scale the trees split well on, and negative values (rare sentinels) pass through.
float scaled(int64_t v) { return v >= 0 ? float(std::log2(1.0 + double(v))) : float(v); }

class KnobFeatures final : public FeatureExtractor {
 public:
  explicit KnobFeatures(const ConfigSpace& space) : space_(space) {
    std::string schema = "knobs/v1:";
    for (const Knob& knob : space.knobs()) {
      if (&knob != &space.knobs().front()) schema += ',';
      schema += knob.name();
      if (knob.kind() == KnobKind::split) {
        schema += '/' + std::to_string(knob.parts());
        for (int p = 0; p < knob.parts(); ++p) {
          names_.push_back(knob.name() + '.' + std::to_string(p));
        }
      } else {
        names_.push_back(knob.name());
      }
    }
    schema_ = std::move(schema);
  }

  std::string schema() const override { return schema_; }
  int size() const override { return int(names_.size()); }
  std::vector<std::string> names() const override { return names_; }

  void extract(const Config& config, std::span<float> out) const override {
    const std::vector<Knob>& knobs = space_.knobs();
    const std::vector<int32_t>& entities = config.entities();
    size_t at = 0;
    for (size_t k = 0; k < knobs.size(); ++k) {
      if (knobs[k].kind() == KnobKind::split) {
        for (int64_t f : knobs[k].split_factors(entities[k])) out[at++] = scaled(f);
      } else {
        out[at++] = scaled(knobs[k].value(entities[k]));
      }
    }
  }

 private:
  const ConfigSpace& space_;
  std::string schema_;
  std::vector<std::string> names_;
};

}  // namespace

std::unique_ptr<FeatureExtractor> make_knob_features(const ConfigSpace& space) {
  return std::make_unique<KnobFeatures>(space);
}

}  // namespace cutune::cost_model
