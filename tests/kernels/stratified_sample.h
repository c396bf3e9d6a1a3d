#pragma once
// Covering samples of a template's configurations for the emulator and compile tests: every
// knob value (or every pair of values of two knobs), not only the common ones.

#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/template.h"

namespace cutune::test {

// What a covering sample must hold: every (knob, value), or every pair of them on two knobs.
enum class Cover { values, pairs };

// How much of what the candidates hold a covering sample holds.
struct CoverCount {
  int seen = 0;     // combinations some candidate has
  int covered = 0;  // combinations some pick has
};

// A knob's "value" in a configuration: a split knob's is its entity (one factorisation), a
// choice's the value itself.
inline int64_t cover_value(const Knob& knob, const Config& c, int k) {
  if (knob.kind() != KnobKind::split) return c.get(k);
  return knob.find_factors(c.split(knob.name())).value_or(-1);
}

// Greedy cover of `candidates`: each pick holds the most combinations (per `cover`) not yet
// held; a pick `usable` turns down (e.g. the verifier rejects it) is dropped and the next best
// taken; at most `max_count` picks (0: no limit). `count` (if given) receives how many
// combinations the candidates hold and how many the picks do.
inline std::vector<Config> covering_configs(const Template& t, std::vector<Config> candidates,
                                            Cover cover,
                                            const std::function<bool(const Config&)>& usable,
                                            int max_count = 0, CoverCount* count = nullptr) {
  const std::vector<Knob>& knobs = t.space().knobs();
  const int n = int(knobs.size());
  // Each candidate as the ids of the combinations it holds.
  std::map<std::tuple<int, int64_t, int, int64_t>, int> ids;
  const auto id = [&](int a, int64_t va, int b, int64_t vb) {
    return ids.try_emplace({a, va, b, vb}, int(ids.size())).first->second;
  };
  std::vector<std::vector<int>> holds;
  for (const Config& c : candidates) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) v[size_t(k)] = cover_value(knobs[size_t(k)], c, k);
    std::vector<int> h;
    for (int a = 0; a < n; ++a) {
      if (cover == Cover::values) {
        h.push_back(id(a, v[size_t(a)], -1, 0));
        continue;
      }
      for (int b = a + 1; b < n; ++b) h.push_back(id(a, v[size_t(a)], b, v[size_t(b)]));
    }
    holds.push_back(std::move(h));
  }
  std::vector<char> covered(ids.size(), 0);
  const auto gain = [&](const std::vector<int>& h) {
    int g = 0;
    for (int i : h) g += !covered[size_t(i)];
    return g;
  };
  std::vector<Config> out;
  while (!candidates.empty() && (max_count == 0 || int(out.size()) < max_count)) {
    size_t best = 0;
    int best_gain = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (int g = gain(holds[i]); g > best_gain) {
        best = i;
        best_gain = g;
      }
    }
    if (best_gain == 0) break;
    Config c = candidates[best];
    std::vector<int> h = holds[best];
    candidates.erase(candidates.begin() + std::ptrdiff_t(best));
    holds.erase(holds.begin() + std::ptrdiff_t(best));
    if (!usable(c)) continue;
    for (int i : h) covered[size_t(i)] = 1;
    out.push_back(c);
  }
  if (count != nullptr) {
    count->seen = int(ids.size());
    count->covered = 0;
    for (char c : covered) count->covered += c;
  }
  return out;
}

// `pool` uniform valid samples of a template, from a fixed seed.
inline std::vector<Config> uniform_pool(const Template& t, uint64_t seed, int pool) {
  std::mt19937_64 rng(seed);
  std::vector<Config> out;
  for (int i = 0; i < pool; ++i) {
    std::optional<Config> c = t.space().sample_valid(rng);
    if (!c) break;
    out.push_back(*c);
  }
  return out;
}

// A few valid configurations that together give every knob every value it takes among
// `pool` uniform valid samples (stratified by knob value, so that a rare value such as
// smem_pad=1 or vec_load=4 is emulated too, not only the common ones). For choice and boolean
// knobs `missing` (if given) receives the values some sample had but no usable pick covered
// (values the shape's constraints rule out altogether cannot be emulated on it and are not
// listed: callers choose shapes that admit the values they care about, and say so).
inline std::vector<Config> stratified_configs(const Template& t, uint64_t seed,
                                              const std::function<bool(const Config&)>& usable,
                                              std::vector<std::string>* missing = nullptr,
                                              int pool = 4000) {
  std::vector<Config> candidates = uniform_pool(t, seed, pool);
  const std::vector<Knob>& knobs = t.space().knobs();
  std::set<std::pair<int, int64_t>> seen, covered;
  for (const Config& c : candidates) {
    for (int k = 0; k < int(knobs.size()); ++k) seen.insert({k, cover_value(knobs[k], c, k)});
  }
  std::vector<Config> out = covering_configs(t, std::move(candidates), Cover::values, usable);
  for (const Config& c : out) {
    for (int k = 0; k < int(knobs.size()); ++k) covered.insert({k, cover_value(knobs[k], c, k)});
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
