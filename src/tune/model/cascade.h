#pragma once
// A cascade for the model-based tuner's annealing: a cheap surrogate model over the knob
// features scores every annealing step, and only the best `survivors` distinct configurations
// it reaches get the expensive features (IR) and are ranked by the main model's acquisition.
// Annealing 128 chains x 500 steps reaches ~40k configurations a round never seen before (with
// the cascade, 64 chains by default: fewer); IR vectors for 40k cost about a second, knob
// vectors almost nothing.
//
// The surrogate is an ensemble of boosters on the same records and labels as the main model
// (each member on its own bootstrap resample, standardised by its mean and deviation over the
// records) scored by the same acquisition: mean + kappa * std of the members (kappa 0 or one
// member: their mean). Its fits follow the main model's schedule: from scratch when the main
// model fits from scratch, warm_trees more trees otherwise.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cost_model/features.h"
#include "cost_model/rank_model.h"
#include "src/tune/feature_cache.h"

namespace cutune {

struct CascadeOptions {
  // The survivors for features of this schema (resolves kAuto).
  int survivors_for(std::string_view schema) const {
    if (survivors != kAuto) return survivors;
    return schema.starts_with("ir/") ? kAutoSurvivors : 0;
  }

  // Configurations the annealing hands to the main model (K); 0: no cascade, the annealing
  // scores every step with the main model; kAuto: kAutoSurvivors where the main model's
  // features are IR features (schema "ir/..."), none otherwise (with knob features the
  // surrogate would be the main model again).
  static constexpr int kAuto = -1;
  static constexpr int kAutoSurvivors = 1000;
  int survivors = kAuto;
  int ensemble = 5;  // surrogate boosters (1: one booster, its scores alone)
  // Trees of a surrogate booster at a fit from scratch, and added at a warm fit (0: the main
  // model's). Scoring ~40k new configurations a round costs in proportion to the trees.
  int rounds = 50;
  int warm_trees = 5;
  // Depth of the surrogate's trees (0: the main model's `model.max_depth`).
  int max_depth = 4;
  // Annealing chains while the cascade is on: at most this many (0: AnnealingOptions::chains).
  // The chains persist from round to round, so each round continues where the last stopped.
  int chains = 64;
};

// The surrogate half of the cascade. Not thread-safe; the space must outlive it.
class KnobSurrogate {
 public:
  KnobSurrogate(const ConfigSpace& space, cost_model::RankModelOptions model, int ensemble);

  // Fits (warm: boosts each member by warm_trees) on the records; labels as the main model's.
  // seed and fit number choose the bootstrap resamples and the boosters' seeds. Clears the
  // memoised scores. kappa: the spread's weight in score(). fit_trees: the trees of a member
  // fitted from scratch (0: rounds(); less when the caller splits the fit over two rounds).
  void fit(std::span<const Config> records, std::span<const float> labels, bool warm,
           int warm_trees, uint64_t seed, int fit_number, double kappa, int fit_trees = 0);
  // Trees of a member at a whole fit from scratch.
  int rounds() const { return model_options_.rounds; }
  // Trees of each member now (empty before the first fit).
  std::vector<int> member_trees() const {
    std::vector<int> out;
    for (const Member& m : members_) out.push_back(m.model.trees());
    return out;
  }
  bool trained() const { return !members_.empty(); }
  void reset();

  // The acquisition of each configuration under the current fit (memoised by index).
  std::vector<float> score(const std::vector<Config>& configs);

  const cost_model::FeatureExtractor& extractor() const { return *extractor_; }

 private:
  struct Member {
    cost_model::RankModel model;
    double mean = 0, scale = 1;
  };

  const ConfigSpace& space_;
  cost_model::RankModelOptions model_options_;
  int ensemble_;
  double kappa_ = 0;
  std::unique_ptr<cost_model::FeatureExtractor> extractor_;
  FeatureCache features_;
  std::vector<Member> members_;
  std::unordered_map<uint64_t, float> score_;  // of the current fit
};

// The survivors ranked by their main-model acquisition `score` (best first, ties by lower
// index), the first `count` of them.
std::vector<Config> rank_survivors(const std::vector<Config>& survivors,
                                   std::span<const float> score, int count);

}  // namespace cutune
