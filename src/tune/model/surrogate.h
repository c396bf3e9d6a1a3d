#pragma once
// What the model-based search ranks configurations by: its acquisition.
//
// - An ensemble of `ensemble` XGBoost rankers (AutoTVM's cost model, Chen et al., NeurIPS 2018),
//   each fitted on a bootstrap resample of the records (labels: throughputs normalised within
//   the task, failures at 0) and standardised by its scores' mean and deviation over the
//   records; the acquisition is mean + kappa * std of the members (an upper confidence bound as
//   in GP-UCB, Srinivas et al., ICML 2010, with the bootstrap spread for the posterior's).
// - Refits continue the boosters (refit.warm_trees more trees, on a new resample) until the
//   records have grown by refit.growth since the last fit from scratch or the boosters would
//   pass refit.max_tree_growth times their trees; a fit from scratch on refit.split_from records
//   or more grows its trees over refit.split_parts rounds, so that no round pays for a whole fit.
// - With a margin source (a transfer model, or the analytical prior: options.h margin()), every
//   member fits on top of its weighted scores (base margin), and before the first fit the
//   acquisition is those scores alone.
// - While the records are fewer than gp_until (and without a margin source), a Gaussian process over
//   the knobs' positions (cost_model/gaussian_process.h) is the acquisition instead: mean +
//   gp_kappa * sd. Trees fitted to a few dozen records rank little beyond the values they
//   split on; a smooth prior interpolates between them.
// - With IR features, the cascade (src/tune/model/cascade.h): a knob-feature surrogate fitted on
//   the same records scores the annealing's steps, and only its survivors get IR features.

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "cost_model/features.h"
#include "cost_model/gaussian_process.h"
#include "cost_model/rank_model.h"
#include "src/tune/feature_cache.h"
#include "src/tune/model/cascade.h"
#include "src/tune/model/options.h"

namespace cutune {

// Where a round's time went (seconds of this thread's CPU): the records' feature rows, the
// ensemble's fit, the cascade's fit, the plan.
struct RoundTimes {
  double features = 0, fit = 0, cascade = 0, plan = 0;
};
// The clock those are read from: this thread's CPU time, in seconds.
double thread_cpu_seconds();

// The boosters' options for features of this schema: with IR features, at most ir_rounds
// trees of depth at most ir_max_depth.
cost_model::RankModelOptions main_model_options(const ModelPolicyOptions& o,
                                                std::string_view schema);
// Whether the annealing runs on the cascade's knob-feature surrogate for these features.
bool cascade_on(const ModelPolicyOptions& o, std::string_view schema);

class Surrogate {
 public:
  // The space and the extractor must outlive this.
  Surrogate(const ConfigSpace& space, const cost_model::FeatureExtractor& features,
            const ModelPolicyOptions& options);

  void reset(uint64_t seed);
  // Fits on the records (records[i] measured at throughput[i]); times gets the features, fit
  // and cascade parts.
  void refit(std::span<const Config> records, std::span<const double> throughput,
             RoundTimes& times);

  // Whether the ensemble has been fitted.
  bool trained() const { return !members_.empty(); }
  // Whether there is anything to rank by: a fit, or a margin source.
  bool ranks() const { return trained() || options_.margin() != nullptr; }
  // The acquisition of each configuration (empty when !ranks()).
  std::vector<float> acquisition(const std::vector<Config>& configs);
  // Each member's standardised scores: out[m][i] for configs[i]; empty before the first fit.
  std::vector<std::vector<float>> member_scores(const std::vector<Config>& configs);

  // The cascade's surrogate, once fitted (null otherwise), and its survivors a round.
  KnobSurrogate* cascade() { return cascade_ && cascade_->trained() ? cascade_.get() : nullptr; }
  int survivors() const { return survivors_; }

  int fits() const { return fits_; }
  int warm_fits() const { return warm_fits_; }  // of fits(), those that continued the boosters
  std::vector<int> member_trees() const;
  int pending_trees() const { return pending_trees_; }  // of a split fit, still to grow
  std::vector<int> surrogate_trees() const;             // the cascade's members' trees
  const cost_model::RankModelOptions& model_options() const { return model_options_; }

 private:
  struct Member {
    cost_model::RankModel model;
    double mean = 0, scale = 1;  // of its scores over the records
  };

  std::vector<float> margin_scores(const std::vector<Config>& configs);
  void fit_ensemble(const cost_model::FeatureMatrix& x, const std::vector<float>& labels,
                    const std::vector<float>& margin, bool warm);
  void fit_cascade(std::span<const Config> records, const std::vector<float>& labels, bool warm);
  void fit_gp(std::span<const Config> records, const std::vector<float>& labels);
  // Fills member_z_ for the configurations it lacks; each one's first float there.
  std::vector<size_t> member_rows(const std::vector<Config>& configs);
  std::vector<double> unit_points(std::span<const Config> configs) const;

  const ConfigSpace& space_;
  ModelPolicyOptions options_;
  cost_model::RankModelOptions model_options_;
  int survivors_ = 0;
  FeatureCache features_;
  uint64_t seed_ = 0;
  int fits_ = 0;
  int warm_fits_ = 0;
  int full_fit_rows_ = 0;    // records at the last fit from scratch
  int pending_trees_ = 0;    // of a split fit from scratch, grown at the next refits
  int pending_parts_ = 0;    // the refits they are spread over
  int cascade_pending_ = 0;  // the same for the cascade's surrogate
  double margin_weight_ = 0;
  std::unordered_map<uint64_t, float> source_score_;    // the margin source's, never changes
  std::unordered_map<uint64_t, float> margin_score_;    // weighted, of the current fit
  std::vector<Member> members_;
  std::unordered_map<uint64_t, size_t> member_row_;  // index -> first of its member scores
  std::vector<float> member_z_;                      // standardised, members_.size() a config
  cost_model::GaussianProcess gp_;                   // trained while it is the acquisition
  std::unordered_map<uint64_t, float> gp_score_;
  std::unique_ptr<KnobSurrogate> cascade_;
};

}  // namespace cutune
