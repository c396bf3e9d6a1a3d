#include "src/tune/simulated_annealing.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace cutune {

SimulatedAnnealing::SimulatedAnnealing(const ConfigSpace& space, AnnealingOptions options)
    : space_(space), options_(options) {}

std::vector<Config> SimulatedAnnealing::find_best(const ScoreFunction& score, int count,
                                                  const std::unordered_set<uint64_t>& exclude,
                                                  std::mt19937_64& rng) {
  last_steps_ = 0;
  last_change_ = 0;
  if (count <= 0) return {};
  while (static_cast<int>(chains_.size()) < options_.chains) {
    std::optional<Config> c = space_.sample_valid(rng);
    if (!c) break;
    chains_.push_back(std::move(*c));
  }
  if (chains_.empty()) return {};

  // The best set: (score, -index) ordered so that begin() is the worst kept.
  std::set<std::pair<float, int64_t>> best;
  std::unordered_set<uint64_t> in_best;
  auto offer = [&](const Config& c, float s) {
    uint64_t index = c.index();
    if (exclude.contains(index) || in_best.contains(index)) return false;
    std::pair<float, int64_t> key{s, -static_cast<int64_t>(index)};
    if (static_cast<int>(best.size()) >= count) {
      if (!(*best.begin() < key)) return false;
      in_best.erase(static_cast<uint64_t>(-best.begin()->second));
      best.erase(best.begin());
    }
    best.insert(key);
    in_best.insert(index);
    return true;
  };

  std::vector<float> scores = score(chains_);
  for (size_t i = 0; i < chains_.size(); ++i) offer(chains_[i], scores[i]);

  std::uniform_real_distribution<double> u(0, 1);
  const int steps = options_.max_steps;
  const double cool = steps > 0 ? (options_.temp_start - options_.temp_end) / steps : 0;
  double temp = options_.temp_start;
  int last_change = 0;
  std::vector<Config> next(chains_.size());
  for (int k = 0; k < steps; ++k) {
    for (size_t i = 0; i < chains_.size(); ++i) {
      std::optional<Config> n = space_.random_neighbour(chains_[i], rng);
      next[i] = n ? std::move(*n) : chains_[i];  // n is valid (random_neighbour checks)
    }
    std::vector<float> next_scores = score(next);
    for (size_t i = 0; i < chains_.size(); ++i) {
      if (offer(next[i], next_scores[i])) {
        last_change = k;
        last_change_ = k + 1;
      }
      double gain = (next_scores[i] - scores[i]) / (temp + 1e-5);
      if (u(rng) < std::exp(std::min(gain, 1.0))) {
        chains_[i] = next[i];
        scores[i] = next_scores[i];
      }
    }
    temp -= cool;
    last_steps_ = k + 1;
    if (options_.early_stop > 0 && k - last_change > options_.early_stop) break;
  }

  std::vector<Config> out;
  for (auto it = best.rbegin(); it != best.rend(); ++it) {
    out.push_back(space_.get(static_cast<uint64_t>(-it->second)));
  }
  return out;
}

}  // namespace cutune
