#pragma once
// Simulated annealing over a configuration space on model scores, as in AutoTVM's
// SimulatedAnnealingOptimizer (Chen et al., "Learning to Optimize Tensor Programs", NeurIPS
// 2018): many parallel chains, each step moves every chain to a random neighbour (one knob
// changed) and accepts it with probability min(1, exp((s' - s) / T)), T falling linearly from
// temp_start to temp_end over max_steps; the run stops early when the set of best candidates
// has not changed for early_stop steps. The chains' positions persist between calls, so each
// round continues from where the last one ended.

#include <cstdint>
#include <functional>
#include <random>
#include <unordered_set>
#include <vector>

#include "src/space/config_space.h"

namespace cutune {

struct AnnealingOptions {
  int chains = 128;
  int max_steps = 500;
  int early_stop = 50;  // steps without a change in the best set; <= 0: never stop early
  double temp_start = 1.0;
  double temp_end = 0.0;
};

// Scores of configurations, higher = better; one per input, in order.
using ScoreFunction = std::function<std::vector<float>(const std::vector<Config>&)>;

class SimulatedAnnealing {
 public:
  // The space must outlive this.
  SimulatedAnnealing(const ConfigSpace& space, AnnealingOptions options);

  // Up to `count` distinct valid configurations with the highest scores seen during the run,
  // none in `exclude`, best first (ties by lower index).
  std::vector<Config> find_best(const ScoreFunction& score, int count,
                                const std::unordered_set<uint64_t>& exclude, std::mt19937_64& rng);

  void reset() { chains_.clear(); }
  const AnnealingOptions& options() const { return options_; }
  int last_steps() const { return last_steps_; }  // steps the last run took
  // Steps into the last run when its best set last changed (0: only at the start points).
  int last_change() const { return last_change_; }

 private:
  const ConfigSpace& space_;
  AnnealingOptions options_;
  std::vector<Config> chains_;
  int last_steps_ = 0;
  int last_change_ = 0;
};

}  // namespace cutune
