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

}  // namespace cutune
