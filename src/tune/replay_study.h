#pragma once
// How well a search policy does on a replayed space, over many seeds: after each trial, the
// throughput ratio optimum_time / true_time(best found so far), 1.0 being the optimum. "True"
// is the cache's recorded mean: with noise the policy ranks by noisy answers, but the
// configuration it would pick is judged by its real time.
//
// Also random search's exact expectations (sampling without replacement from the space's
// valid configurations, failures counting as throughput 0), the baseline of the Kernel Tuner
// methodology.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "src/replay/replay_space.h"
#include "src/tune/search_policy.h"

namespace cutune {

// Makes a fresh policy over the task's space. Called once per seed, possibly from several
// threads at once.
using PolicyFactory = std::function<std::unique_ptr<SearchPolicy>()>;

struct StudyOptions {
  int trials = 400;
  int seeds = 20;
  int batch = 32;
  bool noise = false;
  int threads = 1;
  uint64_t first_seed = 0;  // seeds first_seed .. first_seed + seeds - 1
};

struct StudyResult {
  double optimum_ms = 0;
  // curves[s][t-1]: the ratio after t trials for seed s (0 while nothing valid was found).
  // A curve shorter than `trials` means the policy ran out of configurations; it has then
  // measured everything and the last value holds.
  std::vector<std::vector<double>> curves;
  double seconds = 0;

  // Median over seeds of the ratio after `trials` trials.
  double median_ratio_at(int trials) const;
  // Per seed, the first trial count reaching `fraction` of the optimum (nullopt: never).
  std::vector<std::optional<int>> trials_to(double fraction) const;
  // The median of trials_to over seeds; nullopt when the median seed did not reach it.
  std::optional<double> median_trials_to(double fraction) const;
};

// `on_seed_done(done, total)` is called after each seed (from the worker threads, serialised).
StudyResult run_replay_study(const replay::ReplayTask& task, const PolicyFactory& make_policy,
                             const StudyOptions& options,
                             const std::function<void(int, int)>& on_seed_done = {});

// The expected throughput ratio (optimum time / best time) of the best of n configurations
// drawn without replacement:
// E[max throughput of the sample] / optimum throughput, by the hypergeometric formula
// E[max] = Σ_i v_(i) C(i-1, n-1) / C(N, n) over the ascending throughputs v_(1..N).
double expected_random_ratio(const replay::ReplayTask& task, int n);
// Expected trials for random search to reach `fraction` of the optimum: (N + 1) / (k + 1),
// k being the number of configurations within that fraction.
double expected_random_trials_to(const replay::ReplayTask& task, double fraction);

// A needle test space made from a real cache: the optimum kept, every other configuration
// within `plateau` of it slowed to exactly `plateau` (a plateau of good ones), and the
// optimum's one-knob neighbours slowed to at most `neighbour` of its throughput (below the
// plateau), so that the only configuration within 95% is two or more knob changes from the
// plateau. Deterministic;
// failed entries stay failed. The plateau is the best of the rest, the usual stall.
struct NeedleInfo {
  uint64_t plateau = 0;  // configurations at the plateau's ratio after the change
  int distance = 0;      // knob changes from the optimum to the nearest plateau member
  uint64_t slowed_neighbours = 0;
};
replay::KtCache make_needle_cache(replay::KtCache cache, double plateau = 0.89,
                                  double neighbour = 0.8, NeedleInfo* info = nullptr);

}  // namespace cutune
