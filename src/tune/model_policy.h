#pragma once
// The model-based tuner of AutoTVM (Chen et al., "Learning to Optimize Tensor Programs",
// NeurIPS 2018): an XGBoost ranking model of the measured configurations, refitted every
// plan_size new measurements, and simulated annealing on its scores to choose what to measure
// next.
//
// Each round: labels are throughputs normalised within the task (failures, including
// configurations the space or the compiler rejected, at 0), one query group; the model is
// refitted from scratch (with a transfer model, on top of its weighted scores as base margin);
// annealing (chains persisting between rounds) collects the plan_size best-scored valid
// configurations not yet measured or proposed; a batch takes them in order, except that each
// slot is, with probability epsilon, a uniformly random unmeasured configuration instead.
// Before there is anything to fit (no measurement with a positive throughput), proposals are
// random, or annealed on the transfer model alone when there is one.
//
// With `diversity`, the plan is picked greedily from three times as many annealed candidates,
// each adding its normalised rank score plus the share of knob values it brings that the
// plan does not hold yet (after AutoTVM's submodular pick).

#include <memory>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "cost_model/features.h"
#include "cost_model/rank_model.h"
#include "src/tune/feature_cache.h"
#include "src/tune/search_policy.h"
#include "src/tune/simulated_annealing.h"
#include "src/tune/transfer_model.h"

namespace cutune {

struct ModelPolicyOptions {
  int plan_size = 64;  // refit after this many new measurements
  AnnealingOptions annealing;
  double epsilon = 0.05;
  bool diversity = false;
  cost_model::RankModelOptions model;  // objective: pairwise (default) or regression
  std::shared_ptr<const TransferModel> transfer;
};

class ModelPolicy : public SearchPolicy {
 public:
  // The space and the extractor must outlive the policy.
  ModelPolicy(const ConfigSpace& space, const cost_model::FeatureExtractor& features,
              ModelPolicyOptions options);

  void reset(uint64_t seed) override;
  std::vector<Config> propose(int batch) override;
  void observe(const std::vector<Config>& configs,
               const std::vector<MeasureResult>& results) override;
  std::string name() const override { return "xgb"; }

  // The current model's scores (with the transfer margin, if any); empty before the first fit
  // when there is no transfer model.
  std::vector<float> predict(const std::vector<Config>& configs);
  // Refits on everything observed and re-plans now (what propose does every plan_size).
  void refit_and_plan();

  int fits() const { return fits_; }
  int last_annealing_steps() const { return annealer_.last_steps(); }

 private:
  std::vector<float> transfer_margin(const std::vector<Config>& configs);
  void plan();

  const ConfigSpace& space_;
  ModelPolicyOptions options_;
  FeatureCache features_;
  SimulatedAnnealing annealer_;
  cost_model::RankModel model_;
  std::mt19937_64 rng_;

  std::unordered_set<uint64_t> visited_;        // observed or proposed
  std::unordered_map<uint64_t, size_t> row_of_;  // observed index -> position below
  std::vector<Config> observed_;
  std::vector<double> throughput_;
  int new_since_fit_ = 0;
  int fits_ = 0;
  double margin_weight_ = 0;                          // w(n) of the current fit
  std::unordered_map<uint64_t, float> global_score_;  // transfer model, never changes
  std::unordered_map<uint64_t, float> score_;         // current model, cleared at each fit
  std::vector<Config> plan_;                          // best first; consumed from the front
  size_t plan_next_ = 0;
};

std::unique_ptr<SearchPolicy> make_model_policy(const ConfigSpace& space,
                                                const cost_model::FeatureExtractor& features,
                                                ModelPolicyOptions options = {});

}  // namespace cutune
