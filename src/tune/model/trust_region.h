#pragma once
// The trust region around the incumbent, and the second basin: after each fit, a share of the
// round goes to the untried valid configurations one knob change from the best measured
// configuration, then, when those run out, two changes away, each radius in the order of the
// acquisition (a trust region of radius 1, then 2, as in greedy iterated local search, but
// ranked by the model). The share doubles for every plan at which the best has not improved,
// up to max_share, and falls back when it improves: a stalled search spends more of each round
// next to its best, so that a better configuration one or two changes away is measured within
// a bounded number of rounds even where the model ranks it low.
//
// Ties. When several configurations share the best throughput (a plateau: the model gives them
// one label and cannot rank next to them), the region is centred on all of them (at most
// `centres`, the first measured first), takes at least plateau_share of the round, and (with
// `support`) ranks both radii together by how many of the ties lie within two changes of each
// candidate, then by the acquisition.
//
// A second basin. Once the best has not risen by basin.gain for basin.stall plans, basin.share
// of the region's slots (at least one; one stays with the incumbent) climbs elsewhere: from
// the best measured configuration that is not tied with the best, has no better measured one
// within two knob changes (a local best of what is measured) and still has untried valid
// one-change neighbours; its neighbours, best acquisition first. As the climb measures better
// neighbours the centre moves to them. A search settled in a basin of near-optima keeps
// climbing from the best point of another, where the region around the incumbent and annealing
// on a model fitted mostly to that basin do not go (Kernel Tuner's basin hopping and iterated
// local searches climb from several starts).

#include <cstdint>
#include <vector>

#include "src/tune/model/options.h"
#include "src/tune/model/search_state.h"
#include "src/tune/simulated_annealing.h"

namespace cutune {

class TrustRegion {
 public:
  // The space must outlive this.
  TrustRegion(const ConfigSpace& space, TrustRegionOptions trust, BasinOptions basin);

  // The region's and the second basin's picks for a round of `size` (the state's stall
  // counters updated for this plan), best first; `stream` seeds the draws of a wide space's
  // radius 2.
  std::vector<Config> plan(const SearchState& state, int size, const ScoreFunction& score,
                           uint64_t stream);
  // The region's share of the last planned round.
  double share() const { return share_; }

 private:
  std::vector<Config> incumbent_picks(const SearchState& state, int count,
                                      const ScoreFunction& score, uint64_t stream) const;
  std::vector<Config> basin_picks(const SearchState& state, int count,
                                  const ScoreFunction& score) const;

  const ConfigSpace& space_;
  TrustRegionOptions trust_;
  BasinOptions basin_;
  double share_ = 0;
};

}  // namespace cutune
