#include "src/tune/model/options.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace cutune {

namespace {

void require(bool ok, const char* field, const char* range, double value) {
  if (!ok) {
    throw std::invalid_argument(
        fmt::format("model option {} must be {} (got {})", field, range, value));
  }
}

void in_unit(double v, const char* field) {
  require(std::isfinite(v) && v >= 0 && v <= 1, field, "in [0, 1]", v);
}

void at_least(double v, double least, const char* field) {
  require(std::isfinite(v) && v >= least, field, least == 0 ? ">= 0" : ">= 1", v);
}

}  // namespace

void ModelPolicyOptions::validate() const {
  at_least(plan_size, 1, "plan_size");
  at_least(first_batch, 0, "first_batch");
  in_unit(round_fraction, "round_fraction");
  at_least(min_batch, 1, "min_batch");
  in_unit(bound_bias, "bound_bias");
  in_unit(epsilon, "epsilon");
  require(ensemble >= 1 && ensemble <= 32, "ensemble", "in [1, 32]", ensemble);
  at_least(kappa, 0, "kappa");
  at_least(gp_until, 0, "gp_until");
  at_least(gp_kappa, 0, "gp_kappa");
  at_least(ir_rounds, 0, "ir_rounds");
  at_least(ir_max_depth, 0, "ir_max_depth");
  in_unit(trust.share, "trust.share");
  in_unit(trust.max_share, "trust.max_share");
  at_least(trust.centres, 1, "trust.centres");
  in_unit(trust.plateau_share, "trust.plateau_share");
  in_unit(basin.share, "basin.share");
  at_least(basin.stall, 0, "basin.stall");
  in_unit(basin.gain, "basin.gain");
  at_least(refit.warm_trees, 0, "refit.warm_trees");
  at_least(refit.growth, 0, "refit.growth");
  at_least(refit.split_from, 0, "refit.split_from");
  require(refit.split_parts >= 2, "refit.split_parts", ">= 2", refit.split_parts);
  at_least(refit.max_tree_growth, 0, "refit.max_tree_growth");
  at_least(annealing.chains, 1, "annealing.chains");
  at_least(annealing.max_steps, 1, "annealing.max_steps");
  at_least(model.rounds, 1, "model.rounds");
  at_least(model.max_depth, 1, "model.max_depth");
  require(std::isfinite(model.eta) && model.eta > 0 && model.eta <= 1, "model.eta", "in (0, 1]",
          model.eta);
  require(model.subsample > 0 && model.subsample <= 1, "model.subsample", "in (0, 1]",
          model.subsample);
  require(model.colsample > 0 && model.colsample <= 1, "model.colsample", "in (0, 1]",
          model.colsample);
  at_least(model.min_child_weight, 0, "model.min_child_weight");
  at_least(model.pairs_per_row, 1, "model.pairs_per_row");
  at_least(model.max_bin, 1, "model.max_bin");
  require(cascade.survivors >= CascadeOptions::kAuto, "cascade.survivors", ">= -1 (auto)",
          cascade.survivors);
  require(cascade.ensemble >= 1 && cascade.ensemble <= 32, "cascade.ensemble", "in [1, 32]",
          cascade.ensemble);
  at_least(cascade.rounds, 0, "cascade.rounds");
  at_least(cascade.warm_trees, 0, "cascade.warm_trees");
  at_least(cascade.max_depth, 0, "cascade.max_depth");
  at_least(cascade.chains, 0, "cascade.chains");
}

ModelPolicyOptions ModelPolicyOptions::classic() const {
  ModelPolicyOptions o = *this;
  o.first_batch = 0;
  o.round_fraction = 0.5;
  o.min_batch = 1 << 20;
  o.bound_bias = 0;
  o.kappa = 3.0;
  o.gp_until = 0;
  o.trust.share = 0;
  o.basin.share = 0;
  o.refit.warm_trees = 0;
  return o;
}

}  // namespace cutune
