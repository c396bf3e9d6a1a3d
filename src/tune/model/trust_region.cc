#include "src/tune/model/trust_region.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_set>

#include "src/tune/model/neighbourhood.h"

namespace cutune {

TrustRegion::TrustRegion(const ConfigSpace& space, TrustRegionOptions trust, BasinOptions basin)
    : space_(space), trust_(trust), basin_(basin) {}

std::vector<Config> TrustRegion::plan(const SearchState& state, int size,
                                      const ScoreFunction& score, uint64_t stream) {
  share_ = 0;
  if (trust_.share <= 0) return {};
  const double most = std::max(trust_.max_share, trust_.share);
  share_ = std::min(most, trust_.share * std::ldexp(1.0, std::min(state.trust.stalled, 30)));
  if (trust_.plateau_share > 0 && state.best() > 0) {
    const double floor = state.tie_floor();
    const auto tied = std::count_if(state.throughput().begin(), state.throughput().end(),
                                    [&](double t) { return t >= floor; });
    if (tied > 1) share_ = std::max(share_, trust_.plateau_share);
  }
  const int count = std::max(1, static_cast<int>(std::lround(share_ * size)));
  std::vector<Config> picks = incumbent_picks(state, count, score, stream);
  if (basin_.share <= 0 || state.basin.stalled < basin_.stall || picks.empty()) return picks;
  // A share of the slots (at least one, and one stays with the incumbent) goes to the second
  // basin; a pick in both lists counts once.
  const int slots = std::max(1, static_cast<int>(std::lround(basin_.share * double(picks.size()))));
  std::vector<Config> second = basin_picks(state, slots, score);
  if (second.empty()) return picks;
  picks.resize(picks.size() - std::min(picks.size() - 1, second.size()));
  std::unordered_set<uint64_t> in_picks;
  for (const Config& c : picks) in_picks.insert(c.index());
  for (Config& c : second) {
    if (!in_picks.contains(c.index())) picks.push_back(std::move(c));
  }
  return picks;
}

std::vector<Config> TrustRegion::incumbent_picks(const SearchState& state, int count,
                                                 const ScoreFunction& score,
                                                 uint64_t stream) const {
  if (state.best() <= 0) return {};
  // The ties, the first measured first; all count for the support, at most `centres` are
  // centres.
  const double floor = state.tie_floor();
  std::vector<size_t> ties;
  for (size_t i = 0; i < state.size(); ++i) {
    if (state.throughput(i) >= floor) ties.push_back(i);
  }
  std::vector<Config> centres;
  for (size_t i = 0; i < ties.size() && static_cast<int>(i) < trust_.centres; ++i) {
    centres.push_back(state.config(ties[i]));
  }
  Rings rings = neighbour_rings(space_, centres, state.visited(), 2, stream);
  std::vector<Config> out;
  if (trust_.support && ties.size() > 1) {
    // Both radii together, by how many ties lie within two knob changes, then by the
    // acquisition: a configuration surrounded by the plateau is the better bet.
    std::vector<Config> all = std::move(rings.radius1);
    all.insert(all.end(), rings.radius2.begin(), rings.radius2.end());
    const size_t picks = std::min<size_t>(count, all.size());
    if (picks == 0) return out;
    std::vector<int> support(all.size(), 0);
    for (size_t i = 0; i < all.size(); ++i) {
      for (size_t t : ties) {
        support[i] += knob_changes(all[i].entities(), state.config(t).entities(), 2) <= 2;
      }
    }
    const std::vector<float> s = score(all);
    std::vector<size_t> idx(all.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + picks, idx.end(), [&](size_t a, size_t b) {
      if (support[a] != support[b]) return support[a] > support[b];
      return s[a] != s[b] ? s[a] > s[b] : all[a].index() < all[b].index();
    });
    for (size_t i = 0; i < picks; ++i) out.push_back(all[idx[i]]);
    return out;
  }
  // Radius 1 first, radius 2 what is left.
  const size_t quota1 = std::min<size_t>(rings.radius1.size(), count);
  const size_t quota2 = std::min<size_t>(rings.radius2.size(), count - quota1);
  auto take = [&](const std::vector<Config>& ring, size_t quota) {
    if (quota == 0) return;
    for (size_t i : best_positions(ring, score(ring), quota)) out.push_back(ring[i]);
  };
  take(rings.radius1, quota1);
  take(rings.radius2, quota2);
  return out;
}

std::vector<Config> TrustRegion::basin_picks(const SearchState& state, int count,
                                             const ScoreFunction& score) const {
  // The measured configurations best first; the first that is no tie of the best, has no
  // better one within two knob changes and has an untried valid one-change neighbour is the
  // centre. O(n^2) comparisons at worst, each stopping at 3 differing knobs.
  if (count <= 0 || state.best() <= 0) return {};
  const std::vector<size_t> order = state.best_first();
  const double floor = state.tie_floor();
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t c = order[i];
    const double t = state.throughput(c);
    if (t <= 0) break;
    if (t >= floor) continue;  // the incumbent's own region
    bool local_best = true;
    for (size_t j = 0; j < i && local_best; ++j) {
      local_best =
          !(state.throughput(order[j]) > t &&
            knob_changes(state.config(c).entities(), state.config(order[j]).entities(), 2) <= 2);
    }
    if (!local_best) continue;
    std::vector<Config> ring =
        neighbour_rings(space_, std::span(&state.config(c), 1), state.visited(), 1).radius1;
    if (!ring.empty()) return best_by(ring, score, count);
  }
  return {};
}

}  // namespace cutune
