#pragma once
// Deterministic samples of valid GEMM configurations for the kernel tests.

#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/template.h"

namespace cutune::test {

// `count` configurations drawn uniformly among the valid ones, from a fixed seed.
inline std::vector<Config> sample_configs(const Template& t, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Config> out;
  for (int i = 0; i < count; ++i) {
    std::optional<Config> c = t.space().sample_valid(rng);
    if (!c) break;
    out.push_back(*c);
  }
  return out;
}

// A few valid configurations that together give every knob every value it takes among
// `pool` uniform valid samples (stratified by knob value, so that a rare value such as
// smem_pad=1 or vec_load=4 is emulated too, not only the common ones). Greedy: each pick
// covers the most (knob, value) pairs not yet covered; a pick `usable` turns down (e.g. the
// verifier rejects it) is dropped and the next best taken. For choice and boolean knobs
// `missing` (if given) receives the listed values no usable sample had.
inline std::vector<Config> stratified_configs(
    const Template& t, uint64_t seed, const std::function<bool(const Config&)>& usable,
    std::vector<std::string>* missing = nullptr, int pool = 4000) {
  std::mt19937_64 rng(seed);
  std::vector<Config> candidates;
  for (int i = 0; i < pool; ++i) {
    std::optional<Config> c = t.space().sample_valid(rng);
    if (!c) break;
    candidates.push_back(*c);
  }
  const std::vector<Knob>& knobs = t.space().knobs();
  std::set<std::pair<int, int64_t>> covered;
  const auto gain = [&](const Config& c) {
    int g = 0;
    for (int k = 0; k < int(knobs.size()); ++k) g += !covered.count({k, c.get(k)});
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
    for (int k = 0; k < int(knobs.size()); ++k) covered.insert({k, c.get(k)});
    out.push_back(c);
  }
  if (missing != nullptr) {
    for (int k = 0; k < int(knobs.size()); ++k) {
      if (knobs[k].kind() == KnobKind::split) continue;
      for (int64_t v : knobs[k].values()) {
        if (!covered.count({k, v})) missing->push_back(knobs[k].name() + "=" + std::to_string(v));
      }
    }
  }
  return out;
}

inline std::string describe(const Template& t, const Config& c) {
  std::string shape;
  for (int64_t s : t.shape()) shape += (shape.empty() ? "" : ",") + std::to_string(s);
  return t.name() + " " + shape + " config " + std::to_string(c.index()) + ": " + c.to_json().dump();
}

}  // namespace cutune::test
