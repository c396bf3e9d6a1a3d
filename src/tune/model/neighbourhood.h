#pragma once
// The neighbourhood of configurations in a space: the valid configurations one and two knob
// changes (entity positions) away from a set of centres. The trust region and the second basin
// both take their candidates from here.

#include <cstdint>
#include <random>
#include <span>
#include <unordered_set>
#include <vector>

#include "src/space/config_space.h"
#include "src/tune/simulated_annealing.h"

namespace cutune {

struct Rings {
  std::vector<Config> radius1, radius2;
};

// The valid configurations not in `exclude` one knob change (radius1) and, with radius 2, two
// changes (radius2) from any of `centres`, each once (a configuration near several centres
// where it is first met). Centre by centre: its radius 1 knob by knob in value order, then its
// radius 2 in the same order; where a centre has more than kMaxPairDraws two-change neighbours
// (a wide space), its radius 2 is that many draws from a generator seeded with `stream`
// instead, shared out among the centres (at least 256 each).
Rings neighbour_rings(const ConfigSpace& space, std::span<const Config> centres,
                      const std::unordered_set<uint64_t>& exclude, int radius, uint64_t stream = 0);
inline constexpr size_t kMaxPairDraws = 4096;

// The knobs in which two configurations differ, counted no further than most + 1.
int knob_changes(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int most);

// Positions 0..scores.size()-1 with the `count` best first: higher score first, then the lower
// configuration index.
std::vector<size_t> best_positions(const std::vector<Config>& configs,
                                   const std::vector<float>& scores, size_t count);

// The first `count` of `configs` by `score` (best_positions).
std::vector<Config> best_by(const std::vector<Config>& configs, const ScoreFunction& score,
                            int count);

}  // namespace cutune
