#pragma once
// The model-based tuner of AutoTVM (Chen et al., "Learning to Optimize Tensor Programs",
// NeurIPS 2018): a model of the measured configurations, refitted every round, and simulated
// annealing on its scores to choose what to measure next. Each round reads
//
//   state (search_state.h) -> surrogate (surrogate.h) -> slots: the trust region and the
//   second basin (trust_region.h), then annealing on the acquisition for the rest
//
// and each slot of a batch is, with probability epsilon, a uniformly random unmeasured
// configuration instead. Rounds are small while few records exist: a refit after every
// clamp(round_fraction n, min_batch, plan_size) new measurements, n being the records at the
// last fit; propose() returns no more than what is left of the current round. Before the first
// fit the proposals are a random first batch of first_batch drawn toward the knobs' bounds
// (start_design.h), or, with a margin source (a transfer model, the analytical prior:
// options.h), the first_batch best of annealing on its scores alone.

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "cost_model/features.h"
#include "src/tune/model/options.h"
#include "src/tune/model/search_state.h"
#include "src/tune/model/surrogate.h"
#include "src/tune/model/trust_region.h"
#include "src/tune/search_policy.h"
#include "src/tune/simulated_annealing.h"

namespace cutune {

class ModelPolicy : public SearchPolicy {
 public:
  // The space and the extractor must outlive the policy. Throws std::invalid_argument for
  // options out of range (ModelPolicyOptions::validate).
  ModelPolicy(const ConfigSpace& space, const cost_model::FeatureExtractor& features,
              ModelPolicyOptions options);

  void reset(uint64_t seed) override;
  std::vector<Config> propose(int batch) override;
  void observe(const std::vector<Config>& configs,
               const std::vector<MeasureResult>& results) override;
  std::string name() const override { return "xgb"; }
  // Raises the lower bound of the round size from the next refit on; the first random batch
  // is unchanged.
  void set_min_round(int size) override { min_round_ = std::max(0, size); }

  // Refits on everything observed and re-plans now (what propose does every round).
  void refit_and_plan();
  // The acquisition of each configuration (empty before the first fit without transfer).
  std::vector<float> predict(const std::vector<Config>& configs) {
    return surrogate_.acquisition(configs);
  }
  const Surrogate& surrogate() const { return surrogate_; }
  Surrogate& surrogate() { return surrogate_; }
  const SearchState& state() const { return state_; }
  int fits() const { return surrogate_.fits(); }
  // The trust region's share of the current round (0 when off or before the first fit).
  double incumbent_share() const { return trust_share_; }
  const RoundTimes& last_round_times() const { return round_times_; }
  // The annealing's options as resolved (with a cascade, at most cascade.chains chains).
  const AnnealingOptions& annealing_options() const { return annealer_.options(); }
  int last_annealing_steps() const { return annealer_.last_steps(); }
  int last_annealing_change() const { return annealer_.last_change(); }
  // What the cascade's annealing handed to the ensemble at the last plan, best first.
  const std::vector<Config>& last_survivors() const { return survivors_; }

 private:
  void plan();

  const ConfigSpace& space_;
  ModelPolicyOptions options_;
  Surrogate surrogate_;
  TrustRegion trust_;
  SimulatedAnnealing annealer_;
  SearchState state_;
  std::mt19937_64 rng_;
  uint64_t seed_ = 0;
  std::vector<Config> plan_;  // best first; consumed from the front
  size_t plan_next_ = 0;
  int round_size_ = 0;  // refit after this many new measurements
  int min_round_ = 0;   // set_min_round
  int new_since_fit_ = 0;
  int proposed_since_fit_ = 0;
  double trust_share_ = 0;
  std::vector<Config> survivors_;  // of the last plan
  RoundTimes round_times_;
};

std::unique_ptr<SearchPolicy> make_model_policy(const ConfigSpace& space,
                                                const cost_model::FeatureExtractor& features,
                                                ModelPolicyOptions options = {});

}  // namespace cutune
