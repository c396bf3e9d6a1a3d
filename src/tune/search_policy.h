#pragma once
// A search policy decides which configurations to measure next. One narrow interface, so that
// the tuning loop and the replay benchmarks treat every policy alike:
//
//   reset(seed)            forget everything; the same seed then gives the same proposals
//                          for the same observations;
//   propose(b)             up to b configurations, none of them proposed or observed before
//                          and none that the space says is invalid; none only when the space
//                          has no such configuration left; fewer than b (but at least one)
//                          when the policy wants results first (the model policy's small
//                          early rounds);
//   observe(configs, rs)   the results of measured configurations, in any order, whether or
//                          not the policy proposed them (a resumed log is observed first).
//
// Policies are not thread-safe; use one per tuning run.

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "src/records/measure_result.h"
#include "src/space/config_space.h"

namespace cutune {

enum class TunerKind { xgb, genetic, random, grid };

// "xgb", "ga", "random", "grid": the names used on the command line.
std::string_view to_string(TunerKind kind);
// std::invalid_argument naming the accepted names for anything else.
TunerKind parse_tuner_kind(std::string_view name);

class SearchPolicy {
 public:
  virtual ~SearchPolicy() = default;
  virtual void reset(uint64_t seed) = 0;
  virtual std::vector<Config> propose(int batch) = 0;
  virtual void observe(const std::vector<Config>& configs,
                       const std::vector<MeasureResult>& results) = 0;
  virtual std::string name() const = 0;
  // How many trials the whole run will take, when the caller knows (before the first
  // propose); policies may spend exploration accordingly. Ignored by default.
  virtual void set_budget(int /*trials*/) {}
  // The smallest round of proposals between two refits that the caller wants (0: none). On a
  // GPU the tuner asks for rounds that take at least as long to measure as a proposal takes
  // (TuneOptions::time_aware_rounds), so the GPU does not wait on the model. Ignored by default.
  virtual void set_min_round(int /*size*/) {}
};

// What search maximises: 1 / mean time (1/s) for an ok result, 0 for any failure.
double throughput_of(const MeasureResult& result);

// A uniformly drawn valid configuration whose index is not in `visited`, or nullopt when the
// space has none left. Rejection sampling first; when that keeps missing (a nearly exhausted
// space), an enumeration of the space's remaining valid points.
std::optional<Config> draw_unvisited(const ConfigSpace& space,
                                     const std::unordered_set<uint64_t>& visited,
                                     std::mt19937_64& rng);

// Uniform sampling without replacement among valid configurations.
std::unique_ptr<SearchPolicy> make_random_policy(const ConfigSpace& space);
// Valid configurations in index order (the seed does not matter).
std::unique_ptr<SearchPolicy> make_grid_policy(const ConfigSpace& space);

struct GeneticOptions {
  int population = 100;  // children per generation, and parents kept (the fittest seen)
  double mutation_probability = 0.1;  // per knob of each child
};
std::unique_ptr<SearchPolicy> make_genetic_policy(const ConfigSpace& space,
                                                  GeneticOptions options = {});

}  // namespace cutune
