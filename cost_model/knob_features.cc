// Knob features, for spaces without IR (replayed caches): per knob value v (each split factor
// counts as one), two columns,
//
//   log2(1 + v)                   the magnitude;
//   log2(v / 2^ctz(v)), v > 0     the odd part: 0 exactly for powers of two.
//
// Why the second: GPU kernels are fast at power-of-two sizes (warps of 32, memory segments,
// shared-memory banks, vector widths) and often an order of magnitude slower just beside
// them. A tree ensemble sees the magnitude only through thresholds, so "v is a power of two"
// over {16, 32, 48, ..., 256} costs it one split per value; the odd part makes it one split.
// Where every value is a power of two (the GEMM caches) the column is constant and the
// trees never split on it. Negative or zero values (sentinels) give v itself and 0.
//
// Schema "knobs/v2:<knob names>"; the length is fixed by the space's knobs.

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cost_model/features.h"

namespace cutune::cost_model {

namespace {

float magnitude(int64_t v) { return v >= 0 ? float(std::log2(1.0 + double(v))) : float(v); }

float odd_part(int64_t v) {
  if (v <= 0) return 0.0f;
  auto u = static_cast<uint64_t>(v);
  return float(std::log2(double(u >> std::countr_zero(u))));
}

class KnobFeatures final : public FeatureExtractor {
 public:
  explicit KnobFeatures(const ConfigSpace& space) : space_(space) {
    schema_ = "knobs/v2:";
    for (const Knob& knob : space.knobs()) {
      if (&knob != &space.knobs().front()) schema_ += ',';
      schema_ += knob.name();
      if (knob.kind() == KnobKind::split) {
        schema_ += '/' + std::to_string(knob.parts());
        for (int p = 0; p < knob.parts(); ++p) add_names(knob.name() + '.' + std::to_string(p));
      } else {
        add_names(knob.name());
      }
    }
  }

  std::string schema() const override { return schema_; }
  int size() const override { return int(names_.size()); }
  std::vector<std::string> names() const override { return names_; }

  void extract(const Config& config, std::span<float> out) const override {
    const std::vector<Knob>& knobs = space_.knobs();
    const std::vector<int32_t>& entities = config.entities();
    size_t at = 0;
    auto put = [&](int64_t v) {
      out[at++] = magnitude(v);
      out[at++] = odd_part(v);
    };
    for (size_t k = 0; k < knobs.size(); ++k) {
      if (knobs[k].kind() == KnobKind::split) {
        for (int64_t f : knobs[k].split_factors(entities[k])) put(f);
      } else {
        put(knobs[k].value(entities[k]));
      }
    }
  }

 private:
  void add_names(const std::string& name) {
    names_.push_back(name);
    names_.push_back(name + ".odd");
  }

  const ConfigSpace& space_;
  std::string schema_;
  std::vector<std::string> names_;
};

}  // namespace

std::unique_ptr<FeatureExtractor> make_knob_features(const ConfigSpace& space) {
  return std::make_unique<KnobFeatures>(space);
}

}  // namespace cutune::cost_model
