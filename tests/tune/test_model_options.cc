// ModelPolicyOptions::validate (src/tune/model/options.h): one line naming the field for every
// value out of range; and the classic preset's search.

#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "src/tune/model/model_policy.h"
#include "src/tune/replay_measurer_adapter.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

TEST_CASE(
    "validate: the defaults and the classic preset pass, a value out of range names its field") {
  CHECK_NOTHROW(ModelPolicyOptions{}.validate());
  CHECK_NOTHROW(ModelPolicyOptions{}.classic().validate());
  const std::vector<std::pair<std::string, std::function<void(ModelPolicyOptions&)>>> bad = {
      {"plan_size", [](auto& o) { o.plan_size = 0; }},
      {"first_batch", [](auto& o) { o.first_batch = -1; }},
      {"round_fraction", [](auto& o) { o.round_fraction = 1.5; }},
      {"min_batch", [](auto& o) { o.min_batch = 0; }},
      {"bound_bias", [](auto& o) { o.bound_bias = -0.1; }},
      {"epsilon", [](auto& o) { o.epsilon = 2; }},
      {"ensemble", [](auto& o) { o.ensemble = 33; }},
      {"kappa", [](auto& o) { o.kappa = std::nan(""); }},
      {"gp_until", [](auto& o) { o.gp_until = -1; }},
      {"gp_kappa", [](auto& o) { o.gp_kappa = -1; }},
      {"ir_rounds", [](auto& o) { o.ir_rounds = -1; }},
      {"ir_max_depth", [](auto& o) { o.ir_max_depth = -1; }},
      {"trust.share", [](auto& o) { o.trust.share = 1.01; }},
      {"trust.max_share", [](auto& o) { o.trust.max_share = -1; }},
      {"trust.centres", [](auto& o) { o.trust.centres = 0; }},
      {"trust.plateau_share", [](auto& o) { o.trust.plateau_share = 3; }},
      {"basin.share", [](auto& o) { o.basin.share = 1.5; }},
      {"basin.stall", [](auto& o) { o.basin.stall = -1; }},
      {"basin.gain", [](auto& o) { o.basin.gain = -0.5; }},
      {"refit.warm_trees", [](auto& o) { o.refit.warm_trees = -1; }},
      {"refit.growth", [](auto& o) { o.refit.growth = -1; }},
      {"refit.split_from", [](auto& o) { o.refit.split_from = -1; }},
      {"refit.split_parts", [](auto& o) { o.refit.split_parts = 1; }},
      {"refit.max_tree_growth", [](auto& o) { o.refit.max_tree_growth = -1; }},
      {"annealing.chains", [](auto& o) { o.annealing.chains = 0; }},
      {"annealing.max_steps", [](auto& o) { o.annealing.max_steps = 0; }},
      {"model.rounds", [](auto& o) { o.model.rounds = 0; }},
      {"model.max_depth", [](auto& o) { o.model.max_depth = 0; }},
      {"model.eta", [](auto& o) { o.model.eta = 0; }},
      {"model.subsample", [](auto& o) { o.model.subsample = 1.5; }},
      {"model.colsample", [](auto& o) { o.model.colsample = 0; }},
      {"model.min_child_weight", [](auto& o) { o.model.min_child_weight = -1; }},
      {"model.pairs_per_row", [](auto& o) { o.model.pairs_per_row = 0; }},
      {"model.max_bin", [](auto& o) { o.model.max_bin = 0; }},
      {"cascade.survivors", [](auto& o) { o.cascade.survivors = -2; }},
      {"cascade.ensemble", [](auto& o) { o.cascade.ensemble = 0; }},
      {"cascade.rounds", [](auto& o) { o.cascade.rounds = -1; }},
      {"cascade.warm_trees", [](auto& o) { o.cascade.warm_trees = -1; }},
      {"cascade.max_depth", [](auto& o) { o.cascade.max_depth = -1; }},
      {"cascade.chains", [](auto& o) { o.cascade.chains = -1; }},
  };
  for (const auto& [field, spoil] : bad) {
    INFO(field);
    ModelPolicyOptions o;
    spoil(o);
    try {
      o.validate();
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      CHECK(what.find("model option " + field + " must be") == 0);
      CHECK(what.find('\n') == std::string::npos);
    }
  }
  // The policy refuses such options too.
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ModelPolicyOptions o;
  o.epsilon = -1;
  CHECK_THROWS_AS(ModelPolicy(task.space(), features, o), std::invalid_argument);
}

TEST_CASE("classic: one random first batch, rounds of plan_size, every fit from scratch") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = test::small_model().classic();
  ModelPolicy p(task.space(), features, o);
  p.reset(3);
  std::vector<int> sizes;
  for (int round = 0; round < 4; ++round) {
    std::vector<Config> b = p.propose(o.plan_size);
    sizes.push_back(static_cast<int>(b.size()));
    p.observe(b, m.measure(b));
    CHECK(p.incumbent_share() == 0);  // no trust region
  }
  CHECK(sizes == std::vector<int>(4, o.plan_size));
  CHECK(p.fits() == 3);
  CHECK(p.surrogate().warm_fits() == 0);
}
