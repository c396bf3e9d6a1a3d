#pragma once
// The start of a model-based search, before there is anything to fit: random proposals, each
// choice knob drawn, with probability `bias`, at its smallest or largest value (half each) and
// otherwise uniformly (split and boolean knobs uniformly). Fast kernels often sit where a knob
// can go no further (the largest tile, no shared memory, the most unrolling); a first fit that
// has seen such corners does not take a search to them only by chance. The policy makes the
// first batch small (ModelPolicyOptions::first_batch) so that the first fit comes soon.

#include <cstdint>
#include <optional>
#include <random>
#include <unordered_set>
#include <vector>

#include "src/space/config_space.h"

namespace cutune {

// A random valid configuration not in `visited`, drawn toward the bounds as above; nothing
// after 1,000 draws that were all invalid or visited.
std::optional<Config> draw_toward_bounds(const ConfigSpace& space,
                                         const std::unordered_set<uint64_t>& visited,
                                         std::mt19937_64& rng, double bias);

// Up to `count` of `best_first` (a ranking, best first), spread out: each taken one differs
// from every one taken before in at least `min_changes` knobs, the requirement lowered by one
// whenever a pass over the ranking leaves the batch short. For a first batch ranked by a
// margin source alone (the analytical prior, which cannot tell many knobs apart and so ties
// whole families of configurations), so that one batch does not measure eight near-copies.
std::vector<Config> spread_best(const std::vector<Config>& best_first, int count,
                                int min_changes);

}  // namespace cutune
