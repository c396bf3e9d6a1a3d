// The model policy's early trials (space-filling design, small rounds), its adaptive
// exploration weight and its local search around the best measured configurations; and the
// needle test space on a real cache.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cost_model/features.h"
#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/replay_study.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

using test::small_model;

int knob_changes(const Config& a, const Config& b) {
  int d = 0;
  for (size_t k = 0; k < a.entities().size(); ++k) d += a.entities()[k] != b.entities()[k];
  return d;
}

// Proposes, measures and observes a first batch of 32; the index of its best.
size_t first_round_best(ModelPolicy& p, ReplayMeasurerAdapter& m, std::vector<Config>& first,
                        std::vector<MeasureResult>& results) {
  first = p.propose(32);
  results = m.measure(first);
  p.observe(first, results);
  size_t b = 0;
  for (size_t i = 1; i < first.size(); ++i) {
    if (throughput_of(results[i]) > throughput_of(results[b])) b = i;
  }
  return b;
}

}  // namespace

TEST_CASE("the first proposals are a space-filling design, then rounds grow from 8") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = small_model().early();
  o.initial_design = 16;
  ModelPolicy p(task.space(), features, o);
  p.reset(3);
  std::vector<Config> first = p.propose(32);
  REQUIRE(first.size() == 16);
  std::set<uint64_t> distinct;
  std::map<int, std::set<int32_t>> values;  // knob -> entities seen
  for (const Config& c : first) {
    CHECK(task.space().is_valid(c));
    distinct.insert(c.index());
    for (int k = 0; k < 3; ++k) values[k].insert(c.entities()[k]);
  }
  CHECK(distinct.size() == 16);
  // z is unconstrained: the hypercube's strata put each of its 8 values in the design (16
  // random draws miss at least one value 65% of the time).
  CHECK(values[2].size() == 8);

  p.observe(first, m.measure(first));
  std::vector<int> sizes;
  for (int round = 0; round < 6; ++round) {
    std::vector<Config> b = p.propose(32);
    sizes.push_back(static_cast<int>(b.size()));
    p.observe(b, m.measure(b));
  }
  // clamp(n / 2, 8, 32) after n = 16, 24, 36, 54, 81, 113 records.
  CHECK(sizes == std::vector<int>{8, 12, 18, 27, 32, 32});
}

TEST_CASE("after a fit, part of every round is one or two knob changes from the best measured") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = small_model().early();
  o.epsilon = 0;
  o.initial_design = 16;
  o.local_share = 0.25;
  ModelPolicy p(task.space(), features, o);
  p.reset(5);
  std::vector<Config> measured, batch = p.propose(32);
  std::vector<MeasureResult> results = m.measure(batch);
  p.observe(batch, results);
  // The three best of the design.
  std::vector<size_t> order(batch.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return throughput_of(results[a]) > throughput_of(results[b]);
  });
  std::vector<Config> top = {batch[order[0]], batch[order[1]], batch[order[2]]};
  std::vector<Config> next = p.propose(32);
  REQUIRE(next.size() == 8);
  int near = 0;
  for (const Config& c : next) {
    int d = 99;
    for (const Config& t : top) d = std::min(d, knob_changes(c, t));
    near += d <= 2;
  }
  CHECK(near >= 2);  // local_share 0.25 of 8

  // Without local search the round still has 8, from annealing alone.
  o.local_share = 0;
  ModelPolicy plain(task.space(), features, o);
  plain.reset(5);
  std::vector<Config> b = plain.propose(32);
  plain.observe(b, m.measure(b));
  CHECK(plain.propose(32).size() == 8);
}

TEST_CASE("the exploration weight falls with the budget left and stays within kappa") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  // Rounds of 32 (the design), 16 and 24: the fits at 32 and 48 records see the same
  // budget factor (1) under both budgets, so the fit at 72 sees the same records.
  auto kappa_after = [&](int budget) {
    ModelPolicy p(task.space(), features, small_model().early());
    p.reset(2);
    p.set_budget(budget);
    for (int round = 0; round < 3; ++round) {
      std::vector<Config> b = p.propose(32);
      p.observe(b, m.measure(b));
    }
    p.refit_and_plan();  // 72 records
    CHECK(p.last_agreement() <= 1.0 + 1e-9);
    return p.last_kappa();
  };
  double wide = kappa_after(4000), tight = kappa_after(80);
  INFO("kappa with 4000 trials budgeted " << wide << ", with 80: " << tight);
  CHECK(wide <= 3.0);
  CHECK(wide >= 1.5);  // at least half of kappa while budget is left
  // In the last quarter of the budget the weight falls linearly: 4 * (1 - 72 / 80) = 0.4.
  CHECK(tight == Approx(0.4 * wide).margin(1e-9));
}

// The needle space (make_needle_cache) of a real convolution cache: the optimum alone within
// 95%, two knob changes from a plateau at 0.89, its one-knob neighbours slowed to 0.8. Random
// search needs (N + 1) / 2 trials in expectation (about 2,600). Seeds 0-4, batch 32, as
// bench/replay_efficiency --needle: the default xgb tuner's median run reaches the plateau
// within 100 trials and the needle within 200 (153 trials on seeds 0-4; 152 over seeds 0-19
// and 164 over 20-39 with the plateau handling, 172 and 182 without; bench/README.md §7).
TEST_CASE("needle space: the needle is two knob changes from the plateau, xgb finds it") {
  const char* name = "convolution_old/RTX_3090.json.gz";
  test::require_dataset(name);
  NeedleInfo info;
  replay::ReplayTask task = replay::ReplayTask::from_cache(
      make_needle_cache(replay::load_kt_cache(test::kDatasets + "/" + name), 0.89, 0.8, &info));
  CHECK(info.distance == 2);
  CHECK(info.plateau >= 20);
  CHECK(expected_random_trials_to(task, 0.95) > 2000);
  CHECK(expected_random_ratio(task, 400) < 0.95);
  auto features = cost_model::make_knob_features(task.space());
  StudyOptions so;
  so.trials = 400;
  so.seeds = 5;
  so.batch = 32;
  so.threads = 2;
  ModelPolicyOptions mo;
  mo.plan_size = 32;
  StudyResult r = run_replay_study(
      task, [&] { return make_search_policy(TunerKind::xgb, task.space(), features.get(), mo); },
      so);
  INFO("median best at 100: " << r.median_ratio_at(100) << ", at 400: " << r.median_ratio_at(400));
  CHECK(r.median_ratio_at(100) >= 0.889);
  REQUIRE(r.median_trials_to(0.95).has_value());
  CHECK(*r.median_trials_to(0.95) <= 200);
}

TEST_CASE("the trust region: part of each round is one knob from the best, more while it stalls") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = small_model().classic();  // one random first batch, rounds of 32
  o.epsilon = 0;
  o.incumbent_share = 0.25;
  o.incumbent_max_share = 1.0;
  ModelPolicy p(task.space(), features, o);
  p.reset(7);
  std::vector<Config> measured;
  std::vector<MeasureResult> results;
  const size_t first_best = first_round_best(p, m, measured, results);
  CHECK(p.incumbent_share() == 0);  // nothing fitted yet
  auto one_knob_from = [&](const std::vector<Config>& batch, const Config& best) {
    int n = 0;
    for (const Config& c : batch) n += knob_changes(c, best) == 1;
    return n;
  };
  // A fit that improved on nothing before it (the first): the base share, 8 of 32.
  Config best = measured[first_best];
  std::vector<Config> next = p.propose(32);
  REQUIRE(next.size() == 32);
  CHECK(p.incumbent_share() == 0.25);
  CHECK(p.stalled_fits() == 0);
  CHECK(one_knob_from(next, best) >= 8);
  // Rounds whose results are all failures cannot improve the best: the share doubles per
  // stalled fit, up to the maximum, and the rounds stay next to the same best.
  std::vector<double> shares;
  for (int round = 0; round < 3; ++round) {
    std::vector<MeasureResult> failed(next.size());
    for (MeasureResult& r : failed) r.status = MeasureStatus::runtime_error;
    p.observe(next, failed);
    next = p.propose(32);
    shares.push_back(p.incumbent_share());
    // The untried one-knob neighbours (at most 21 in this space) come first, then two-knob ones.
    for (const Config& c : next) {
      if (shares.back() < 1.0) break;
      CHECK(knob_changes(c, best) <= 2);
    }
  }
  CHECK(shares == std::vector<double>{0.5, 1.0, 1.0});
  CHECK(p.stalled_fits() == 3);
}

TEST_CASE("a smaller random first batch, then rounds of a share of the records from a least size") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = small_model();
  o.first_batch = 16;
  o.round_fraction = 0.25;
  o.min_batch = 8;
  auto run = [&](uint64_t seed) {
    ModelPolicy p(task.space(), features, o);
    p.reset(seed);
    std::vector<std::vector<Config>> batches;
    for (int round = 0; round < 7; ++round) {
      std::vector<Config> b = p.propose(32);
      if (round == 0) CHECK(p.fits() == 0);
      if (round == 1) CHECK(p.fits() == 1);  // the first fit follows the 16 random ones
      p.observe(b, m.measure(b));
      batches.push_back(std::move(b));
    }
    return batches;
  };
  std::vector<std::vector<Config>> a = run(11);
  std::vector<int> sizes;
  std::set<uint64_t> distinct;
  for (const auto& b : a) {
    sizes.push_back(static_cast<int>(b.size()));
    for (const Config& c : b) distinct.insert(c.index());
  }
  // 16 random, then clamp(n / 4, 8, 32) after n = 16, 24, 32, 40, 50, 62 records.
  CHECK(sizes == std::vector<int>{16, 8, 8, 8, 10, 12, 15});
  CHECK(distinct.size() == 77);  // no configuration proposed twice
  // Deterministic for a seed; another seed draws another first batch.
  std::vector<std::vector<Config>> again = run(11), other = run(12);
  auto indices = [](const std::vector<std::vector<Config>>& bs) {
    std::vector<uint64_t> out;
    for (const auto& b : bs) {
      for (const Config& c : b) out.push_back(c.index());
    }
    return out;
  };
  CHECK(indices(again) == indices(a));
  CHECK(indices(other) != indices(a));
  // Rounds of a quarter from 4: clamp(n / 4, 4, 32) after n = 16, 20, 25, 31, 38, 47.
  o.min_batch = 4;
  sizes.clear();
  for (const auto& b : run(11)) sizes.push_back(static_cast<int>(b.size()));
  CHECK(sizes == std::vector<int>{16, 4, 5, 6, 7, 9, 11});
  // The default, an eighth from 2: clamp(n / 8, 2, 32) after n = 16, 18, 20, 22, 24, 27.
  o.min_batch = ModelPolicyOptions{}.min_batch;
  o.round_fraction = ModelPolicyOptions{}.round_fraction;
  REQUIRE(o.min_batch == 2);
  REQUIRE(o.round_fraction == 0.125);
  sizes.clear();
  for (const auto& b : run(11)) sizes.push_back(static_cast<int>(b.size()));
  CHECK(sizes == std::vector<int>{16, 2, 2, 2, 2, 3, 3});

  // The caller proposing again without observing still gets proposals (random ones).
  ModelPolicy p(task.space(), features, o);
  p.reset(11);
  CHECK(p.propose(32).size() == 16);
  CHECK(p.propose(32).size() == 32);
}

TEST_CASE("a stalled trust region widens: half its share two knob changes from the best") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  // Distances from the best of the first batch of the first `n` proposals of the round after
  // one that failed entirely (a stalled fit), with and without widening.
  auto stalled_round = [&](bool widen) {
    ModelPolicyOptions o = small_model().classic();  // one random first batch, rounds of 32
    o.epsilon = 0;
    o.incumbent_share = 0.25;  // 8 of 32, not growing
    o.incumbent_max_share = 0.25;
    o.incumbent_widen = widen;
    ModelPolicy p(task.space(), features, o);
    p.reset(7);
    std::vector<Config> first;
    std::vector<MeasureResult> results;
    const size_t b = first_round_best(p, m, first, results);
    std::vector<Config> next = p.propose(32);
    CHECK(p.stalled_fits() == 0);
    std::vector<MeasureResult> failed(next.size());
    for (MeasureResult& r : failed) r.status = MeasureStatus::runtime_error;
    p.observe(next, failed);
    std::vector<Config> after = p.propose(32);
    CHECK(p.stalled_fits() == 1);
    std::vector<int> d;
    for (size_t i = 0; i < 8 && i < after.size(); ++i)
      d.push_back(knob_changes(after[i], first[b]));
    return d;
  };
  // The trust region's picks lead the round: radius 1 first, then radius 2.
  CHECK(stalled_round(false) == std::vector<int>(8, 1));
  CHECK(stalled_round(true) == std::vector<int>{1, 1, 1, 1, 2, 2, 2, 2});
}

TEST_CASE("credit: the trust region's share follows whose picks land among the best records") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = small_model().classic();  // one random first batch, rounds of 32
  o.epsilon = 0;
  o.incumbent_share = 0.25;
  o.incumbent_max_share = 0.25;  // no stall doubling beyond the credited share
  o.credit_top = 0.25;
  o.credit_max = 0.75;
  // Rounds after the first fit: the one-knob neighbours of the first batch's best get `near`
  // (a time just above the best's: among the best records, the best unchanged); the rest fail.
  auto shares = [&](bool neighbours_hit, bool credit) {
    ModelPolicyOptions po = o;
    if (!credit) po.credit_top = 0;
    ModelPolicy p(task.space(), features, po);
    p.reset(3);
    std::vector<Config> first;
    std::vector<MeasureResult> results;
    const size_t b = first_round_best(p, m, first, results);
    const Config best = first[b];
    MeasureResult hit = results[b], miss;
    hit.times_s = {results[b].mean_s() * 1.001};
    miss.status = MeasureStatus::runtime_error;
    std::vector<double> out;
    for (int round = 0; round < 4; ++round) {
      std::vector<Config> next = p.propose(32);
      out.push_back(p.incumbent_share());
      std::vector<MeasureResult> r;
      for (const Config& c : next) {
        bool near = knob_changes(c, best) == 1;
        r.push_back(near == neighbours_hit ? hit : miss);
      }
      p.observe(next, r);
    }
    return out;
  };
  // Without credit (and without doubling) the share is the base every round.
  CHECK(shares(true, false) == std::vector<double>(4, 0.25));
  // The first fit has no credit yet: the base share.
  std::vector<double> up = shares(true, true), down = shares(false, true);
  INFO(fmt::format("shares: neighbours hit {}; model's picks hit {}", fmt::join(up, " "),
                   fmt::join(down, " ")));
  CHECK(up[0] == 0.25);
  CHECK(down[0] == 0.25);
  // Trust-region picks hit and the model's miss: the share grows to credit_max (later rounds
  // reach radius 2, whose picks miss here too, so it may ease off again, never above the most).
  CHECK(up[1] >= 0.7);
  for (double u : up) CHECK(u <= 0.75);
  // The reverse: it shrinks below the base (recovering as radius 2, which hits here, is reached).
  CHECK(down[1] < 0.1);
  for (size_t i = 1; i < down.size(); ++i) CHECK(down[i] < 0.25);
}
