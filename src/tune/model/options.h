#pragma once
// The model-based search's settings, one group per part of the policy (src/tune/model/): the
// rounds and the start, the surrogate (an ensemble of XGBoost rankers scored by an upper
// confidence bound, a Gaussian process for the first records, warm and split refits, the
// cascade), the trust region around the best and the second basin. What each mechanism does
// is said where it is implemented; bench/notes/search-experiments.md lists the measurements
// behind each default.

#include <memory>

#include "cost_model/rank_model.h"
#include "src/tune/model/cascade.h"
#include "src/tune/simulated_annealing.h"
#include "src/tune/transfer_model.h"

namespace cutune {

// The trust region (src/tune/model/trust_region.h): a share of each round from the untried
// one-, then two-knob neighbours of the best measured configuration(s).
struct TrustRegionOptions {
  double share = 0.5;           // of each round, in [0, 1] (0: off)
  double max_share = 0.75;      // the most it doubles to while the best stalls, in [0, 1]
  int centres = 64;             // tied bests it is centred on, >= 1
  bool support = true;          // on a plateau: rank by the ties within two changes first
  double plateau_share = 0.75;  // its least share while the best is tied, in [0, 1]
};

// The second basin (src/tune/model/trust_region.h): once the best has not risen by `gain` for
// `stall` plans, `share` of the trust region's slots climbs from a local best elsewhere.
struct BasinOptions {
  double share = 0.5;  // in [0, 1] (0: off)
  int stall = 4;       // plans, >= 0 (0: from the first plan on)
  double gain = 0.02;  // the least relative rise that counts as progress, in [0, 1]
};

// How the ensemble is refitted (src/tune/model/surrogate.h).
struct RefitOptions {
  int warm_trees = 15;  // trees a warm refit adds to each booster (0: every fit from scratch)
  double growth = 0.5;  // fit from scratch once the records grew by this share, >= 0
  // A fit from scratch on at least split_from records (0: never) spans split_parts rounds.
  int split_from = 512;
  int split_parts = 4;  // >= 2
  // A warm refit that would take a booster past this many times its trees at a fit from
  // scratch fits from scratch instead (0: no cap).
  double max_tree_growth = 4.0;
};

struct ModelPolicyOptions {
  int plan_size = 64;   // the largest round: refit after this many measurements, >= 1
  int first_batch = 8;  // random proposals before the first fit (0: the whole batch)
  double round_fraction =
      0.125;                // a round is clamp(round_fraction * records, min_batch, plan_size)
  int min_batch = 2;        // >= 1
  double bound_bias = 0.5;  // the first batch's draws toward the bounds, in [0, 1]
  double epsilon = 0.05;    // each slot uniformly random with this probability, in [0, 1]
  int ensemble = 5;         // boosters, each on a bootstrap resample, in [1, 32]
  double kappa = 1.0;       // acquisition: mean + kappa * spread of the members, >= 0
  int gp_until = 64;        // a Gaussian process ranks while records < this (0: never)
  double gp_kappa = 2.0;    // its acquisition: mean + gp_kappa * sd, >= 0
  // With IR features (schema "ir/..."), the boosters' trees and depth are capped (0: no cap).
  int ir_rounds = 50;
  int ir_max_depth = 4;
  TrustRegionOptions trust;
  BasinOptions basin;
  RefitOptions refit;
  AnnealingOptions annealing;
  cost_model::RankModelOptions model;
  CascadeOptions cascade;
  std::shared_ptr<const TransferModel> transfer;  // records of other tasks, or none
  // The analytical prior of a template's IR features (src/tune/prior_margin.h), or none.
  std::shared_ptr<const MarginSource> prior;

  // What the rankers' base margin comes from: the transfer model where there is one (it was
  // measured), else the prior; null for neither.
  const MarginSource* margin() const {
    return transfer ? static_cast<const MarginSource*>(transfer.get()) : prior.get();
  }

  // Throws std::invalid_argument, one line naming the field, for a value out of its range.
  void validate() const;

  // AutoTVM's search as first published, for comparison: one random first batch of plan_size,
  // rounds of plan_size, every fit from scratch, no trust region, basin or Gaussian process.
  ModelPolicyOptions classic() const;
};

}  // namespace cutune
