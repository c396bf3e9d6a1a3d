#include "src/tune/model/neighbourhood.h"

#include <algorithm>
#include <numeric>
#include <optional>

namespace cutune {

Rings neighbour_rings(const ConfigSpace& space, std::span<const Config> centres,
                      const std::unordered_set<uint64_t>& exclude, int radius, uint64_t stream) {
  const auto& knobs = space.knobs();
  Rings out;
  std::optional<std::mt19937_64> rng;  // seeded at the first draw: most spaces need none
  std::unordered_set<uint64_t> seen;
  auto consider = [&](const std::vector<int32_t>& e, std::vector<Config>& ring) {
    Config c(&space, e);
    const uint64_t index = c.index();
    if (exclude.contains(index) || !seen.insert(index).second) return;
    if (space.is_valid(c)) ring.push_back(std::move(c));
  };
  for (const Config& centre : centres) {
    const std::vector<int32_t>& base = centre.entities();
    std::vector<int32_t> e = base;
    size_t pairs = 0;
    for (size_t i = 0; i < knobs.size(); ++i) {
      for (int32_t a = 0; a < knobs[i].cardinality(); ++a) {
        if (a == base[i]) continue;
        e[i] = a;
        consider(e, out.radius1);
      }
      e[i] = base[i];
      for (size_t j = i + 1; j < knobs.size(); ++j) {
        pairs += size_t(knobs[i].cardinality() - 1) * size_t(knobs[j].cardinality() - 1);
      }
    }
    if (radius < 2) continue;
    if (pairs <= kMaxPairDraws) {
      for (size_t i = 0; i < knobs.size(); ++i) {
        for (int32_t a = 0; a < knobs[i].cardinality(); ++a) {
          if (a == base[i]) continue;
          e[i] = a;
          for (size_t j = i + 1; j < knobs.size(); ++j) {
            for (int32_t b = 0; b < knobs[j].cardinality(); ++b) {
              if (b == base[j]) continue;
              e[j] = b;
              consider(e, out.radius2);
            }
            e[j] = base[j];
          }
        }
        e[i] = base[i];
      }
      continue;
    }
    std::vector<size_t> movable;
    for (size_t k = 0; k < knobs.size(); ++k) {
      if (knobs[k].cardinality() > 1) movable.push_back(k);
    }
    if (movable.size() < 2) continue;
    if (!rng) rng.emplace(stream);
    std::uniform_int_distribution<size_t> knob(0, movable.size() - 1);
    const size_t draws = std::max<size_t>(256, 4 * kMaxPairDraws / centres.size());
    for (size_t d = 0; d < std::min(kMaxPairDraws, draws); ++d) {
      const size_t i = movable[knob(*rng)], j = movable[knob(*rng)];
      if (i == j) continue;
      e = base;
      for (size_t k : {i, j}) {
        std::uniform_int_distribution<int64_t> other(0, knobs[k].cardinality() - 2);
        const int64_t v = other(*rng);
        e[k] = static_cast<int32_t>(v >= base[k] ? v + 1 : v);
      }
      consider(e, out.radius2);
    }
  }
  return out;
}

int knob_changes(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int most) {
  int d = 0;
  for (size_t k = 0; k < a.size() && d <= most; ++k) d += a[k] != b[k];
  return d;
}

std::vector<size_t> best_positions(const std::vector<Config>& configs,
                                   const std::vector<float>& scores, size_t count) {
  std::vector<size_t> idx(configs.size());
  std::iota(idx.begin(), idx.end(), 0);
  const size_t keep = std::min(count, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(), [&](size_t a, size_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : configs[a].index() < configs[b].index();
  });
  idx.resize(keep);
  return idx;
}

std::vector<Config> best_by(const std::vector<Config>& configs, const ScoreFunction& score,
                            int count) {
  if (configs.empty() || count <= 0) return {};
  std::vector<Config> out;
  for (size_t i : best_positions(configs, score(configs), static_cast<size_t>(count))) {
    out.push_back(configs[i]);
  }
  return out;
}

}  // namespace cutune
