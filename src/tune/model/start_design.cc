#include "src/tune/model/start_design.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace cutune {

std::optional<Config> draw_toward_bounds(const ConfigSpace& space,
                                         const std::unordered_set<uint64_t>& visited,
                                         std::mt19937_64& rng, double bias) {
  const auto& knobs = space.knobs();
  // Each choice knob's positions of its smallest and largest value; -1 for other knobs.
  std::vector<std::pair<int32_t, int32_t>> bounds(knobs.size(), {-1, -1});
  for (size_t k = 0; k < knobs.size(); ++k) {
    if (knobs[k].kind() != KnobKind::choice) continue;
    const auto& v = knobs[k].values();
    bounds[k] = {static_cast<int32_t>(std::ranges::min_element(v) - v.begin()),
                 static_cast<int32_t>(std::ranges::max_element(v) - v.begin())};
  }
  std::uniform_real_distribution<double> coin(0, 1);
  for (int tries = 0; tries < 1000; ++tries) {
    std::vector<int32_t> e(knobs.size());
    for (size_t k = 0; k < knobs.size(); ++k) {
      const double r = bounds[k].first >= 0 ? coin(rng) : 1;
      if (r < bias / 2)
        e[k] = bounds[k].first;
      else if (r < bias)
        e[k] = bounds[k].second;
      else
        e[k] = std::uniform_int_distribution<int32_t>(0, knobs[k].cardinality() - 1)(rng);
    }
    Config c(&space, std::move(e));
    if (!visited.contains(c.index()) && space.is_valid(c)) return c;
  }
  return std::nullopt;
}

std::vector<Config> spread_best(const std::vector<Config>& best_first, int count,
                                int min_changes) {
  std::vector<Config> out;
  std::vector<bool> taken(best_first.size(), false);
  auto changes = [](const Config& a, const Config& b) {
    int n = 0;
    for (size_t k = 0; k < a.entities().size(); ++k) n += a.entities()[k] != b.entities()[k];
    return n;
  };
  for (int need = min_changes; need >= 0 && static_cast<int>(out.size()) < count; --need) {
    for (size_t i = 0; i < best_first.size() && static_cast<int>(out.size()) < count; ++i) {
      if (taken[i]) continue;
      const bool apart = std::ranges::all_of(
          out, [&](const Config& o) { return changes(o, best_first[i]) >= need; });
      if (!apart) continue;
      taken[i] = true;
      out.push_back(best_first[i]);
    }
  }
  return out;
}

}  // namespace cutune
