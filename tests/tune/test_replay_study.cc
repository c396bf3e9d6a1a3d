#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "cost_model/features.h"
#include "src/tune/policies.h"
#include "src/tune/replay_study.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

TEST_CASE("random search's exact expectation matches simulation") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  // n = 1: the mean throughput ratio over the space; n = all: the optimum.
  std::vector<double> times = task.sorted_valid_times();
  double points = double(task.summary().points);
  double mean = 0;
  for (double t : times) mean += times.front() / t;
  CHECK(expected_random_ratio(task, 1) == Approx(mean / points));
  CHECK(expected_random_ratio(task, static_cast<int>(points)) == 1.0);

  std::vector<double> ratios;
  for (double t : times) ratios.push_back(times.front() / t);
  ratios.resize(static_cast<size_t>(points), 0.0);  // failed entries
  std::mt19937_64 rng(1);
  double sum = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    std::shuffle(ratios.begin(), ratios.end(), rng);
    sum += *std::max_element(ratios.begin(), ratios.begin() + 10);
  }
  CHECK(expected_random_ratio(task, 10) == Approx(sum / kDraws).epsilon(0.01));
  CHECK(expected_random_trials_to(task, 1.0) == Approx((points + 1) / 2));
}

TEST_CASE("study curves: monotone, median and trials-to thresholds") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  StudyOptions o;
  o.trials = 60;
  o.seeds = 5;
  o.batch = 16;
  StudyResult r = run_replay_study(
      task, [&] { return make_random_policy(task.space()); }, o);
  REQUIRE(r.curves.size() == 5);
  for (const auto& c : r.curves) {
    REQUIRE(c.size() == 60);
    CHECK(std::is_sorted(c.begin(), c.end()));
    CHECK(c.back() <= 1.0);
  }
  CHECK(r.median_ratio_at(60) >= r.median_ratio_at(10));
  CHECK_FALSE(r.median_trials_to(2.0).has_value());
  std::optional<double> t = r.median_trials_to(0.5);
  REQUIRE(t.has_value());
  CHECK(*t >= 1);

  // The same seeds give the same curves, whatever the thread count.
  o.threads = 2;
  StudyResult again = run_replay_study(
      task, [&] { return make_random_policy(task.space()); }, o);
  CHECK(again.curves == r.curves);
}

// Whether the model helps, on two real caches of different kinds with the tuner's own
// features: fixed seeds 0-9, 100 trials, a refit every 20. The median run must close at least
// 40% of the gap between random search's exact expectation and the optimum on each; with the
// model's choices replaced by random ones (epsilon = 1) the same check fails on both (the
// median stays within a few per cent of the expectation), so it catches a model that stops
// helping. The benchmark (20 seeds, 400 trials) has the full picture. Ten seeds, not five:
// on conv_milo A4000 a run either finds the optimum by 100 trials or stays at 0.81, and since
// the Gaussian process ranks the first rounds (gp_until) 14% stay (20 seeds of this setup:
// median 0.984, against 0.998 before), so that the median of five moved with one seed.
TEST_CASE("on real GEMM and convolution caches, the xgb tuner beats random clearly") {
  const auto names = {"gemm/RTX_2080_Ti.json.gz", "convolution_milo/A4000.json.gz"};
  for (const char* name : names) test::require_dataset(name);
  for (const char* name : names) {
    replay::ReplayTask task =
        replay::ReplayTask::from_cache(replay::load_kt_cache(test::kDatasets + "/" + name));
    auto features = cost_model::make_knob_features(task.space());
    StudyOptions o;
    o.trials = 100;
    o.seeds = 10;
    o.batch = 20;
    ModelPolicyOptions mo;
    mo.plan_size = 20;
    mo.min_batch = 20;  // every round 20
    mo.annealing.max_steps = 200;
    StudyResult xgb = run_replay_study(
        task, [&] { return make_search_policy(TunerKind::xgb, task.space(), features.get(), mo); },
        o);
    double model = xgb.median_ratio_at(100);
    double random = expected_random_ratio(task, 100);
    INFO(name << ": xgb median " << model << ", random expectation " << random);
    CHECK(model > random + 0.4 * (1.0 - random));
  }
}
