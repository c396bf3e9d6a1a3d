#pragma once
// Stratified samples of a template's configurations for the emulator tests: every knob value,
// not only the common ones.

#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/template.h"

namespace cutune::test {

// A few valid configurations that together give every knob every value it takes among
// `pool` uniform valid samples (stratified by knob value, so that a rare value such as
// smem_pad=1 or vec_load=4 is emulated too, not only the common ones). Greedy: each pick
// covers the most (knob, value) pairs not yet covered; a pick `usable` turns down (e.g. the
// verifier rejects it) is dropped and the next best taken. For choice and boolean knobs
// `missing` (if given) receives the values some sample had but no usable pick covered (values
// the shape's constraints rule out altogether cannot be emulated on it and are not listed:
// callers choose shapes that admit the values they care about, and say so).
inline std::vector<Config> stratified_configs(const Template& t, uint64_t seed,
                                              const std::function<bool(const Config&)>& usable,
                                              std::vector<std::string>* missing = nullptr,
                                              int pool = 4000) {
  std::mt19937_64 rng(seed);
  std::vector<Config> candidates;
  for (int i = 0; i < pool; ++i) {
    std::optional<Config> c = t.space().sample_valid(rng);
    if (!c) break;
    candidates.push_back(*c);
  }
  const std::vector<Knob>& knobs = t.space().knobs();
  // A split knob's "value" is its entity (one factorisation); a choice's, the value itself.
  const auto key = [&](const Config& c, int k) -> std::pair<int, int64_t> {
    if (knobs[k].kind() != KnobKind::split) return {k, c.get(k)};
    return {k, knobs[k].find_factors(c.split(knobs[k].name())).value_or(-1)};
  };
  std::set<std::pair<int, int64_t>> covered, seen;
  for (const Config& c : candidates) {
    for (int k = 0; k < int(knobs.size()); ++k) seen.insert(key(c, k));
  }
  const auto gain = [&](const Config& c) {
    int g = 0;
    for (int k = 0; k < int(knobs.size()); ++k) g += !covered.count(key(c, k));
    return g;
  };
  std::vector<Config> out;
  while (!candidates.empty()) {
    size_t best = 0;
    int best_gain = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (int g = gain(candidates[i]); g > best_gain) {
        best = i;
        best_gain = g;
      }
    }
    if (best_gain == 0) break;
    Config c = candidates[best];
    candidates.erase(candidates.begin() + std::ptrdiff_t(best));
    if (!usable(c)) continue;
    for (int k = 0; k < int(knobs.size()); ++k) covered.insert(key(c, k));
    out.push_back(c);
  }
  if (missing != nullptr) {
    for (int k = 0; k < int(knobs.size()); ++k) {
      if (knobs[k].kind() == KnobKind::split) continue;
      for (int64_t v : knobs[k].values()) {
        if (seen.count({k, v}) && !covered.count({k, v})) {
          missing->push_back(knobs[k].name() + "=" + std::to_string(v));
        }
      }
    }
  }
  return out;
}

}  // namespace cutune::test
