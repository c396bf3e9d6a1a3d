// The trust region around the best measured configuration (src/tune/model/trust_region.h): its
// share and how it grows while the best stalls, its picks on a plateau of ties, and the second
// basin; on the synthetic replay space, with results made up where the plateau must be known.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "src/tune/model/model_policy.h"
#include "src/tune/replay_measurer_adapter.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;
using test::indices;
using test::knob_changes;
using test::timed;

namespace {

// The test model without random slots, and with a first batch of plan_size (32), then rounds
// of 16.
ModelPolicyOptions small_model() {
  ModelPolicyOptions o = test::small_model();
  o.epsilon = 0;
  o.first_batch = 0;
  return o;
}

// Every valid configuration of the space.
std::vector<Config> all_valid(const ConfigSpace& space) {
  std::vector<Config> out;
  std::vector<int32_t> e(space.knobs().size(), 0);
  std::function<void(size_t)> walk = [&](size_t k) {
    if (k == e.size()) {
      Config c(&space, e);
      if (space.is_valid(c)) out.push_back(c);
      return;
    }
    for (int32_t v = 0; v < space.knobs()[k].cardinality(); ++v) {
      e[k] = v;
      walk(k + 1);
    }
  };
  walk(0);
  return out;
}

// The trust region before its handling of tied bests: at most four centres, the first
// measured, rings ranked by the acquisition alone, no plateau share.
ModelPolicyOptions without_plateaus(ModelPolicyOptions o) {
  o.trust.centres = 4;
  o.trust.support = false;
  o.trust.plateau_share = 0;
  return o;
}

struct PlateauRound {
  std::vector<Config> first, ties, next;
  double share = 0;
};

// The task must outlive the result (its configurations point to its space).
// A random first batch of 32 whose first `tied` configurations share the best time (1 s) and
// the rest take 2 s; then the next round.
PlateauRound plateau_round(const replay::ReplayTask& task, const ModelPolicyOptions& o,
                           uint64_t seed, size_t tied) {
  test::ValueFeatures features{task.space()};
  ModelPolicy p(task.space(), features, o);
  p.reset(seed);
  PlateauRound out;
  out.first = p.propose(32);
  std::vector<MeasureResult> results;
  for (size_t i = 0; i < out.first.size(); ++i) {
    results.push_back(timed(i < tied ? 1.0 : 2.0));
    if (i < tied) out.ties.push_back(out.first[i]);
  }
  p.observe(out.first, results);
  out.next = p.propose(32);
  out.share = p.incumbent_share();
  return out;
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

// The first `count` proposals of a round (the trust region's slots come first).
std::vector<Config> head(const std::vector<Config>& round, double share) {
  size_t count = std::max<size_t>(1, static_cast<size_t>(std::lround(share * round.size())));
  return {round.begin(), round.begin() + std::min(count, round.size())};
}

// A policy whose second basin takes half of the trust region from the first plan on.
ModelPolicyOptions basin_model(double share) {
  ModelPolicyOptions o = small_model();
  o.basin.share = share;
  o.basin.stall = 0;
  return o;
}

// The first configuration after the first that differs from it in all three knobs (0: none).
size_t three_changes_from_first(const std::vector<Config>& first) {
  for (size_t i = 1; i < first.size(); ++i) {
    if (knob_changes(first[i], first[0]) == 3) return i;
  }
  return 0;
}

}  // namespace

TEST_CASE("the trust region: part of each round is one knob from the best, more while it stalls") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = test::small_model().classic();  // one random first batch, rounds of 32
  o.epsilon = 0;
  o.trust.share = 0.25;
  o.trust.max_share = 1.0;
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
  CHECK(p.state().trust.stalled == 0);
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
  CHECK(p.state().trust.stalled == 3);
}

TEST_CASE("on a plateau of ties the trust region is centred on all and ranks by support") {
  ModelPolicyOptions o = small_model();  // the default plateau handling
  o.round_fraction = 0.5;                // rounds of n/2, as the sizes below
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  PlateauRound r = plateau_round(task, o, 3, 6);
  REQUIRE(r.first.size() == 32);
  // The round after the first batch is clamp(32 / 2, 8, 32) = 16; the plateau takes 3/4 of it.
  REQUIRE(r.next.size() == 16);
  CHECK(r.share == 0.75);
  // Support: how many of the ties lie within two knob changes. Over every valid untried
  // configuration within two changes of some tie, the 12 picks are the 12 best supported, in
  // order (the acquisition breaks ties of support).
  std::set<uint64_t> tried;
  for (const Config& c : r.first) tried.insert(c.index());
  auto support = [&](const Config& c) {
    int n = 0;
    for (const Config& t : r.ties) n += knob_changes(c, t) <= 2;
    return n;
  };
  std::vector<int> candidates;
  for (const Config& c : all_valid(task.space())) {
    if (!tried.contains(c.index()) && support(c) > 0) candidates.push_back(support(c));
  }
  std::sort(candidates.rbegin(), candidates.rend());
  REQUIRE(candidates.size() > 12);
  std::vector<int> picks;
  for (size_t i = 0; i < 12; ++i) picks.push_back(support(r.next[i]));
  CHECK(picks == std::vector<int>(candidates.begin(), candidates.begin() + 12));
  CHECK(picks.front() > 1);  // several ties around the first pick

  // Deterministic for a seed.
  PlateauRound again = plateau_round(task, o, 3, 6);
  std::vector<uint64_t> a, b;
  for (const Config& c : r.next) a.push_back(c.index());
  for (const Config& c : again.next) b.push_back(c.index());
  CHECK(a == b);

  // Without the plateau handling: the base share, half of the round (8 picks).
  PlateauRound before = plateau_round(task, without_plateaus(o), 3, 6);
  CHECK(before.share == 0.5);
}

TEST_CASE("with a single best measured configuration the plateau handling changes nothing") {
  const ModelPolicyOptions o = small_model();
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  for (uint64_t seed : {5u, 9u}) {
    PlateauRound with = plateau_round(task, o, seed, 1);
    PlateauRound without = plateau_round(task, without_plateaus(o), seed, 1);
    CHECK(with.share == 0.5);  // the base share
    std::vector<uint64_t> a, b;
    for (const Config& c : with.next) a.push_back(c.index());
    for (const Config& c : without.next) b.push_back(c.index());
    CHECK(a == b);
  }
}

TEST_CASE("second basin: part of the trust region climbs from a far local best") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  test::ValueFeatures features{space};
  for (uint64_t seed : {3, 7}) {
    ModelPolicyOptions o = basin_model(0.5);
    o.round_fraction = 0.5;  // rounds of 16 after the first 32: 8 trust-region slots
    ModelPolicy p(space, features, o);
    p.reset(seed);
    std::vector<Config> first = p.propose(32);
    REQUIRE(first.size() == 32);
    // The best (1 s) and, three changes from it, a second local best (1.5 s); the rest 3 s.
    const size_t far = three_changes_from_first(first);
    REQUIRE(far != 0);
    std::vector<MeasureResult> results(first.size(), timed(3.0));
    results[0] = timed(1.0);
    results[far] = timed(1.5);
    p.observe(first, results);
    std::vector<Config> next = p.propose(32);
    std::vector<Config> trust = head(next, p.incumbent_share());
    REQUIRE(trust.size() >= 4);
    // The trust region's picks: the incumbent's neighbours first, then as many of the second
    // centre's one-change neighbours.
    const size_t basin = std::max<size_t>(1, std::lround(0.5 * double(trust.size())));
    for (size_t i = 0; i < trust.size(); ++i) {
      INFO("pick " << i << " of " << trust.size());
      if (i < trust.size() - basin) {
        CHECK(knob_changes(trust[i], first[0]) <= 2);
      } else {
        CHECK(knob_changes(trust[i], first[far]) == 1);
      }
    }
  }
}

TEST_CASE("second basin: a configuration near a better one is no centre") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  test::ValueFeatures features{space};
  auto round = [&](double share) {
    ModelPolicy p(space, features, basin_model(share));
    p.reset(5);
    std::vector<Config> first = p.propose(32);
    REQUIRE(first.size() == 32);
    const size_t far = three_changes_from_first(first);
    REQUIRE(far != 0);
    // The best (1 s); three changes from it Y (1.5 s), and Z, the best with Y's value of the
    // last knob (1.2 s): one change from the best, two from Y. Every other configuration
    // fails. Y has a better configuration within two changes (Z), Z too (the best).
    std::vector<MeasureResult> results(first.size());
    for (MeasureResult& r : results) r.status = MeasureStatus::runtime_error;
    results[0] = timed(1.0);
    results[far] = timed(1.5);
    p.observe(first, results);
    std::vector<int32_t> e = first[0].entities();
    e.back() = first[far].entities().back();
    Config z(&space, e);
    REQUIRE(space.is_valid(z));
    p.observe({z}, {timed(1.2)});
    std::vector<uint64_t> out;
    for (const Config& c : p.propose(32)) out.push_back(c.index());
    return out;
  };
  // No centre qualifies: the round is the one without the option.
  CHECK(round(0.5) == round(0));
}

TEST_CASE("second basin: a best creeping up by less than basin_gain counts as stalled") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  test::ValueFeatures features{space};
  // After the first batch (best 1 s, a local best 1.5 s three changes from it) and one round
  // in which a neighbour of the best beats it by `gain`: the next round and its trust
  // region's share.
  struct Round {
    double trust_share = 0;
    std::vector<Config> picks, first;
    size_t far = 0;
  };
  auto round = [&](double share, double basin_gain, double gain) {
    ModelPolicyOptions o = basin_model(share);
    o.basin.stall = 1;  // one plan without enough gain
    o.basin.gain = basin_gain;
    o.round_fraction = 0.5;
    ModelPolicy p(space, features, o);
    p.reset(11);
    Round r;
    r.first = p.propose(32);
    REQUIRE(r.first.size() == 32);
    r.far = three_changes_from_first(r.first);
    REQUIRE(r.far != 0);
    std::vector<MeasureResult> results(r.first.size(), timed(3.0));
    results[0] = timed(1.0);
    results[r.far] = timed(1.5);
    p.observe(r.first, results);
    // The first plan counts as progress (nothing was best before): no second basin yet.
    std::vector<Config> next = p.propose(32);
    REQUIRE(next.size() == 16);
    // The better neighbour: one change from the best, three from the local best (so that it
    // stays the second basin's centre).
    std::vector<MeasureResult> next_results(next.size(), timed(3.0));
    bool found = false;
    for (size_t i = 0; i < next.size() && !found; ++i) {
      if (knob_changes(next[i], r.first[0]) == 1 && knob_changes(next[i], r.first[r.far]) == 3) {
        next_results[i] = timed(1.0 / (1.0 + gain));
        found = true;
      }
    }
    REQUIRE(found);
    p.observe(next, next_results);
    r.picks = p.propose(32);
    r.trust_share = p.incumbent_share();
    return r;
  };
  // A gain of 0.5%: progress for any gain (the round without the second basin), a stall for
  // a gain of at least 2%.
  CHECK(indices(round(0.5, 0, 0.005).picks) == indices(round(0, 0, 0.005).picks));
  Round creeping = round(0.5, 0.02, 0.005);
  CHECK(indices(creeping.picks) != indices(round(0, 0.02, 0.005).picks));
  std::vector<Config> trust = head(creeping.picks, creeping.trust_share);
  REQUIRE(trust.size() >= 2);
  const size_t basin = std::max<size_t>(1, std::lround(0.5 * double(trust.size())));
  for (size_t i = trust.size() - basin; i < trust.size(); ++i) {
    INFO("pick " << i << " of " << trust.size());
    CHECK(knob_changes(trust[i], creeping.first[creeping.far]) == 1);
  }
  // A gain of 5% is progress for both.
  CHECK(indices(round(0.5, 0.02, 0.05).picks) == indices(round(0, 0.02, 0.05).picks));
}
