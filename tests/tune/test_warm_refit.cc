#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/tune/model/model_policy.h"
#include "src/tune/replay_measurer_adapter.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

ModelPolicyOptions warm_model(int warm_trees, double growth) {
  ModelPolicyOptions o;
  o.plan_size = 32;
  o.min_batch = 1 << 20;  // every round plan_size
  o.model.rounds = 30;
  o.annealing.chains = 32;
  o.annealing.max_steps = 100;
  o.ensemble = 3;
  o.refit.warm_trees = warm_trees;
  o.refit.growth = growth;
  return o;
}

struct Run {
  std::vector<uint64_t> proposed;
  std::vector<Config> observed;
};

Run run(ModelPolicy& p, const replay::ReplayTask& task, uint64_t seed, int rounds) {
  ReplayMeasurerAdapter m(task);
  p.reset(seed);
  Run out;
  for (int r = 0; r < rounds; ++r) {
    std::vector<Config> b = p.propose(32);
    if (b.empty()) break;
    for (const Config& c : b) out.proposed.push_back(c.index());
    p.observe(b, m.measure(b));
    out.observed.insert(out.observed.end(), b.begin(), b.end());
  }
  return out;
}

}  // namespace

TEST_CASE("warm refits follow the schedule and stay deterministic under a seed", "[warm_start]") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  // Rounds of 32: fits at 32, 64, 96, 128, 160 records (the first after the random batch).
  SECTION("off: every fit from scratch") {
    ModelPolicy p(task.space(), features, warm_model(0, 0.5));
    run(p, task, 3, 6);
    CHECK(p.fits() == 5);
    CHECK(p.surrogate().warm_fits() == 0);
  }
  SECTION("growth 0.5: a fresh fit at 32, 64 (>= 48), 96 (>= 96), 160 (>= 144); warm at 128") {
    ModelPolicy p(task.space(), features, warm_model(5, 0.5));
    run(p, task, 3, 6);
    CHECK(p.fits() == 5);
    CHECK(p.surrogate().warm_fits() == 1);
  }
  SECTION("a large growth: only the first fit from scratch") {
    ModelPolicy p(task.space(), features, warm_model(5, 100));
    ModelPolicy q(task.space(), features, warm_model(5, 100));
    Run a = run(p, task, 3, 6);
    CHECK(p.fits() == 5);
    CHECK(p.surrogate().warm_fits() == 4);
    CHECK(a.proposed == run(q, task, 3, 6).proposed);
    // Warm-started members are standardised anew: over the configurations of the last fit
    // (all but the last batch) each member's scores have mean 0 and deviation 1.
    std::vector<Config> fitted(a.observed.begin(), a.observed.end() - 32);
    std::vector<std::vector<float>> z = p.surrogate().member_scores(fitted);
    REQUIRE(z.size() == 3);
    for (const std::vector<float>& m : z) {
      double sum = 0, sq = 0;
      for (float v : m) sum += v;
      double mean = sum / m.size();
      for (float v : m) sq += (v - mean) * (v - mean);
      CHECK(std::abs(mean) < 1e-3);
      CHECK(std::abs(std::sqrt(sq / m.size()) - 1.0) < 1e-3);
    }
  }
}

TEST_CASE("a warm refit moves the scores, and the warm-started tuner finds the optimum",
          "[warm_start]") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  std::vector<Config> all;
  for (uint64_t i = 0; i < task.space().size(); ++i) all.push_back(task.space().get(i));

  ModelPolicy p(task.space(), features, warm_model(5, 100));
  ReplayMeasurerAdapter m(task);
  p.reset(1);
  std::vector<Config> b = p.propose(32);
  p.observe(b, m.measure(b));
  b = p.propose(32);  // the first fit, from scratch
  p.observe(b, m.measure(b));
  std::vector<std::vector<float>> before = p.surrogate().member_scores(all);
  b = p.propose(32);  // a warm fit on 64 records
  REQUIRE(p.surrogate().warm_fits() == 1);
  CHECK(p.surrogate().member_scores(all) != before);

  // As test_search_policies' check for fits from scratch: the one optimum of 432
  // configurations within 128 trials in each of five seeds (random: p ~ 0.3 each).
  const uint64_t best = task.summary().best->index();
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    INFO("seed " << seed);
    ModelPolicy q(task.space(), features, warm_model(5, 100));
    Run r = run(q, task, seed, 4);
    CHECK(q.surrogate().warm_fits() >= 1);
    CHECK(std::find(r.proposed.begin(), r.proposed.end(), best) != r.proposed.end());
  }
}

// Rounds of 32 on the synthetic cache under `seed`: each round's member trees and pending
// trees after its proposal, and every proposal's index.
struct SplitRounds {
  std::vector<std::vector<int>> trees;
  std::vector<int> pending;
  std::vector<uint64_t> proposed;
};

SplitRounds split_rounds(const ModelPolicyOptions& o, uint64_t seed, int rounds) {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ModelPolicy p(task.space(), features, o);
  ReplayMeasurerAdapter m(task);
  p.reset(seed);
  SplitRounds out;
  for (int r = 0; r < rounds; ++r) {
    std::vector<Config> b = p.propose(32);
    REQUIRE(b.size() == 32);
    out.trees.push_back(p.surrogate().member_trees());
    out.pending.push_back(p.surrogate().pending_trees());
    for (const Config& c : b) out.proposed.push_back(c.index());
    p.observe(b, m.measure(b));
  }
  return out;
}

TEST_CASE("a fit from scratch on many records is split over two rounds", "[warm_start]") {
  CHECK(RefitOptions{}.split_parts == 4);  // the default: four rounds, below
  // Rounds of 32, growth 0.5: fits from scratch at 32, 64, 96 and 160 records, warm at 128.
  // From 60 records a fit from scratch is split where half its records exceed a round: at 96
  // and 160 (at 64, 32 more records could reach the next fit from scratch first).
  ModelPolicyOptions o = warm_model(5, 0.5);
  o.first_batch = 0;  // a first batch of 32 too
  o.refit.split_from = 60;
  o.refit.split_parts = 2;
  SplitRounds r = split_rounds(o, 4, 6);
  using V = std::vector<int>;
  // At 128 the split fit is finished: its other 15 trees instead of the 5 warm ones.
  CHECK(r.trees == std::vector<V>{{}, {30, 30, 30}, {30, 30, 30}, {15, 15, 15}, {30, 30, 30},
                                  {15, 15, 15}});
  CHECK(r.pending == V{0, 0, 0, 15, 0, 15});
  // The same under the same seed.
  CHECK(split_rounds(o, 4, 6).proposed == r.proposed);

  // Off (0), or without warm fits to finish the split: every fit from scratch is whole.
  o.refit.split_from = 0;
  CHECK(split_rounds(o, 4, 6).trees[3] == V{30, 30, 30});
  o = warm_model(0, 0.5);
  o.first_batch = 0;
  o.refit.split_from = 60;
  o.refit.split_parts = 2;
  r = split_rounds(o, 4, 6);
  CHECK(r.trees[3] == V{30, 30, 30});
  CHECK(r.pending[3] == 0);
}

TEST_CASE("a split fit from scratch can span three rounds", "[warm_start]") {
  // Rounds of 32, growth 1: fits from scratch at 32, 64 and 128 records, warm at 96, 160,
  // 192 and 224. From 100 records a fit from scratch is split over three rounds where its
  // records exceed two rounds: at 128 (a third of the trees), 160 and 192 (a third each).
  ModelPolicyOptions o = warm_model(5, 1.0);
  o.first_batch = 0;
  o.refit.split_from = 100;
  o.refit.split_parts = 3;
  SplitRounds r = split_rounds(o, 4, 8);
  using V = std::vector<int>;
  CHECK(r.trees == std::vector<V>{{}, {30, 30, 30}, {30, 30, 30}, {35, 35, 35}, {10, 10, 10},
                                  {20, 20, 20}, {30, 30, 30}, {35, 35, 35}});
  CHECK(r.pending == V{0, 0, 0, 0, 20, 10, 0, 0});
  // Growth 0.5: fits from scratch at 32, 64, 96 and 160. At 96 (48 records of growth, fewer
  // than two rounds: the second refit after it could be one from scratch) the fit is whole,
  // though two parts would split it; at 160 (80) it spans three rounds.
  o.refit.growth = 0.5;
  r = split_rounds(o, 4, 8);
  CHECK(r.trees[3] == V{30, 30, 30});
  CHECK(r.trees[5] == V{10, 10, 10});
  CHECK(r.pending == V{0, 0, 0, 0, 0, 20, 10, 0});
}

TEST_CASE("a refit that would pass the tree cap fits from scratch", "[warm_start]") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  auto member_trees = [&](double cap) {
    ModelPolicyOptions o = warm_model(5, 100);  // the records never grow enough to refit
    o.first_batch = 0;
    o.refit.max_tree_growth = cap;
    ModelPolicy p(task.space(), features, o);
    ReplayMeasurerAdapter m(task);
    p.reset(2);
    std::vector<int> out;
    for (int r = 0; r < 7; ++r) {
      std::vector<Config> b = p.propose(32);
      out.push_back(p.surrogate().member_trees().empty() ? 0 : p.surrogate().member_trees()[0]);
      p.observe(b, m.measure(b));
    }
    return std::make_pair(out, p.surrogate().warm_fits());
  };
  // 30 trees from scratch, 5 a warm fit; a cap of 1.5 x 30 = 45 trees.
  CHECK(member_trees(1.5) == std::make_pair(std::vector<int>{0, 30, 35, 40, 45, 30, 35}, 4));
  CHECK(member_trees(0) == std::make_pair(std::vector<int>{0, 30, 35, 40, 45, 50, 55}, 5));
}
