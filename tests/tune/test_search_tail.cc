// The model policy's trust region on a plateau (the best measured throughput tied by several
// configurations) and its knob-value coverage, on the synthetic replay space with results
// made up so that the plateau is known.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "src/tune/model_policy.h"
#include "src/tune/replay_measurer_adapter.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

ModelPolicyOptions small_model() {
  ModelPolicyOptions o = test::small_model();
  o.epsilon = 0;
  o.first_batch = 0;  // a first batch of plan_size (32), then rounds of 16
  return o;
}

int knob_changes(const Config& a, const Config& b) {
  int d = 0;
  for (size_t k = 0; k < a.entities().size(); ++k) d += a.entities()[k] != b.entities()[k];
  return d;
}

MeasureResult timed(double seconds) {
  MeasureResult r;
  r.status = MeasureStatus::ok;
  r.times_s = {seconds};
  return r;
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

}  // namespace

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
  PlateauRound before = plateau_round(task, o.without_plateaus(), 3, 6);
  CHECK(before.share == 0.5);
}

TEST_CASE("with a single best measured configuration the plateau handling changes nothing") {
  const ModelPolicyOptions o = small_model();
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  for (uint64_t seed : {5u, 9u}) {
    PlateauRound with = plateau_round(task, o, seed, 1);
    PlateauRound without = plateau_round(task, o.without_plateaus(), seed, 1);
    CHECK(with.share == 0.5);  // the base share
    std::vector<uint64_t> a, b;
    for (const Config& c : with.next) a.push_back(c.index());
    for (const Config& c : without.next) b.push_back(c.index());
    CHECK(a == b);
  }
}

TEST_CASE("coverage: part of each round holds knob values no measured configuration holds") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = small_model().without_plateaus();
  o.first_batch = 8;         // few records: many knob values not measured yet
  o.min_batch = 8;           // rounds of 8 (clamp(8 / 4, 8, 32))
  o.incumbent_share = 0.25;  // 2 of the round of 8
  o.incumbent_max_share = 0.25;
  o.coverage_share = 0.25;  // 2 of the round of 8, after the trust region's
  ModelPolicy p(task.space(), features, o);
  p.reset(4);
  std::vector<Config> first = p.propose(32);
  REQUIRE(first.size() == 8);
  p.observe(first, m.measure(first));  // without noise: the same results again below
  std::vector<Config> next = p.propose(32);
  REQUIRE(next.size() == 8);
  std::set<std::pair<size_t, int32_t>> held;
  for (const Config& c : first) {
    for (size_t k = 0; k < c.entities().size(); ++k) held.insert({k, c.entities()[k]});
  }
  // The two coverage picks each bring a value neither the records nor the earlier pick hold,
  // one or two knob changes from the best measured.
  size_t best = 0;
  std::vector<MeasureResult> results = m.measure(first);
  for (size_t i = 1; i < first.size(); ++i) {
    if (throughput_of(results[i]) > throughput_of(results[best])) best = i;
  }
  for (size_t i = 2; i < 4; ++i) {
    CHECK(knob_changes(next[i], first[best]) <= 2);
    bool fresh = false;
    for (size_t k = 0; k < next[i].entities().size(); ++k) {
      fresh |= held.insert({k, next[i].entities()[k]}).second;
    }
    CHECK(fresh);
  }
}

namespace {

// Every valid configuration one knob change from c.
std::vector<Config> ring_of(const ConfigSpace& space, const Config& c) {
  std::vector<Config> out;
  for (const Config& o : all_valid(space)) {
    if (knob_changes(o, c) == 1) out.push_back(o);
  }
  return out;
}

// The first `count` proposals of a round (the trust region's slots come first).
std::vector<Config> head(const std::vector<Config>& round, double share) {
  size_t count = std::max<size_t>(1, static_cast<size_t>(std::lround(share * round.size())));
  return {round.begin(), round.begin() + std::min(count, round.size())};
}

}  // namespace

TEST_CASE("restarts: a certified local optimum hands the trust region to a climb from elsewhere") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  test::ValueFeatures features{space};
  for (bool restart : {false, true}) {
    ModelPolicyOptions o = small_model();
    o.restart_share = restart ? 1.0 : 0.0;
    ModelPolicy p(space, features, o);
    p.reset(3);
    std::vector<Config> first = p.propose(32);
    REQUIRE(first.size() == 32);
    std::vector<MeasureResult> results;
    for (size_t i = 0; i < first.size(); ++i) results.push_back(timed(i == 0 ? 1.0 : 3.0));
    p.observe(first, results);
    // Every neighbour of the best measured, and none better: a local optimum.
    std::vector<Config> ring = ring_of(space, first[0]);
    p.observe(ring, std::vector<MeasureResult>(ring.size(), timed(2.0)));
    std::vector<Config> next = p.propose(32);
    REQUIRE(!next.empty());
    if (!restart) {
      // The trust region moves on to two changes from the incumbent.
      for (const Config& c : head(next, p.incumbent_share())) CHECK(knob_changes(c, first[0]) == 2);
      continue;
    }
    // One restart: its start first, measured better than the rest (but not the best).
    const Config start = next[0];
    std::vector<MeasureResult> r2(next.size(), timed(3.0));
    r2[0] = timed(1.5);
    p.observe(next, r2);
    std::vector<Config> climb = p.propose(32);
    REQUIRE(!climb.empty());
    std::vector<Config> steps = head(climb, p.incumbent_share());
    for (const Config& c : steps) CHECK(knob_changes(c, start) == 1);
    // The chain follows its best member: a step measured better than the start.
    std::vector<MeasureResult> r3(climb.size(), timed(3.0));
    r3[0] = timed(1.2);
    p.observe(climb, r3);
    std::vector<Config> on = p.propose(32);
    REQUIRE(!on.empty());
    for (const Config& c : head(on, p.incumbent_share())) CHECK(knob_changes(c, climb[0]) == 1);
  }
}

namespace {

struct RandomRound {
  std::vector<Config> first, next;
};

// A random first batch of 32 whose first configuration is the single best (1 s; the others
// 2 s and more, all distinct), then a round of 8 that is all trust region.
RandomRound trust_round(const replay::ReplayTask& task, double random_share, uint64_t seed,
                        double stratify = 0) {
  test::ValueFeatures features{task.space()};
  ModelPolicyOptions o = small_model();
  o.round_fraction = 0.25;  // clamp(32 / 4, 2, 32) = 8
  o.incumbent_share = 1;
  o.incumbent_max_share = 1;
  o.incumbent_random = random_share;
  o.incumbent_stratify = stratify;
  ModelPolicy p(task.space(), features, o);
  p.reset(seed);
  RandomRound out;
  out.first = p.propose(32);
  std::vector<MeasureResult> results;
  for (size_t i = 0; i < out.first.size(); ++i)
    results.push_back(timed(i == 0 ? 1.0 : 2.0 + 0.01 * i));
  p.observe(out.first, results);
  out.next = p.propose(32);
  return out;
}

std::vector<uint64_t> indices(const std::vector<Config>& cs) {
  std::vector<uint64_t> out;
  for (const Config& c : cs) out.push_back(c.index());
  return out;
}

}  // namespace

TEST_CASE("incumbent_random: trust-region picks drawn at random among the incumbent's neighbours") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  bool differs = false;
  for (uint64_t seed : {1u, 2u, 3u}) {
    RandomRound ranked = trust_round(task, 0, seed);
    RandomRound drawn = trust_round(task, 1, seed);
    REQUIRE(indices(drawn.first) == indices(ranked.first));  // the same start and records
    REQUIRE(ranked.next.size() == 8);
    REQUIRE(drawn.next.size() == 8);
    // Enough untried one-change neighbours that radius 1 is not exhausted.
    const std::vector<uint64_t> start = indices(drawn.first);
    const std::set<uint64_t> tried(start.begin(), start.end());
    size_t untried = 0;
    for (const Config& c : ring_of(task.space(), drawn.first[0]))
      untried += !tried.contains(c.index());
    REQUIRE(untried > 8);
    for (const Config& c : drawn.next) CHECK(knob_changes(c, drawn.first[0]) == 1);
    for (const Config& c : ranked.next) CHECK(knob_changes(c, ranked.first[0]) == 1);
    std::vector<uint64_t> a = indices(ranked.next), b = indices(drawn.next);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    differs |= a != b;  // not the acquisition's 8 best
    // Deterministic for a seed.
    CHECK(indices(trust_round(task, 1, seed).next) == indices(drawn.next));
    // A share of 0.25: 2 of the 8 drawn, the 6 ranked ones the acquisition's first 6.
    RandomRound part = trust_round(task, 0.25, seed);
    REQUIRE(part.next.size() == 8);
    const std::vector<uint64_t> p = indices(part.next), r = indices(ranked.next);
    CHECK(std::vector<uint64_t>(p.begin(), p.begin() + 6) ==
          std::vector<uint64_t>(r.begin(), r.begin() + 6));
    for (const Config& c : part.next) CHECK(knob_changes(c, part.first[0]) == 1);
  }
  CHECK(differs);
}

namespace {

// The knob a one-change neighbour of `centre` changes.
size_t changed_knob(const Config& c, const Config& centre) {
  for (size_t k = 0; k < c.entities().size(); ++k) {
    if (c.entities()[k] != centre.entities()[k]) return k;
  }
  return c.entities().size();
}

}  // namespace

TEST_CASE("incumbent_stratify: the trust region's picks take the changed knobs in turns") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const size_t knobs = task.space().knobs().size();  // 3, each with 8 values
  bool ranked_repeats = false;
  for (uint64_t seed : {1u, 2u, 3u}) {
    RandomRound ranked = trust_round(task, 0, seed);
    RandomRound turns = trust_round(task, 0, seed, 1.0);
    RandomRound half = trust_round(task, 0, seed, 0.5);
    REQUIRE(indices(turns.first) == indices(ranked.first));  // the same start and records
    REQUIRE(indices(half.first) == indices(ranked.first));
    REQUIRE(turns.next.size() == 8);
    REQUIRE(half.next.size() == 8);
    const Config& best = ranked.first[0];
    // Every radius-1 knob has more than two untried values, so each turn of 3 changes each
    // knob once, and the first pick is the acquisition's first.
    for (size_t from = 0; from + knobs <= 6; from += knobs) {
      std::set<size_t> changed;
      for (size_t i = from; i < from + knobs; ++i) {
        CHECK(knob_changes(turns.next[i], best) == 1);
        changed.insert(changed_knob(turns.next[i], best));
      }
      CHECK(changed.size() == knobs);
    }
    CHECK(turns.next[0].index() == ranked.next[0].index());
    std::set<size_t> first_three;
    for (size_t i = 0; i < knobs; ++i) first_three.insert(changed_knob(ranked.next[i], best));
    ranked_repeats |= first_three.size() < knobs;
    // Half: the odd positions in turns, the even ones the acquisition's order without the
    // picks already made.
    std::set<uint64_t> taken;
    size_t a = 0;
    for (size_t i = 0; i < half.next.size(); ++i) {
      if (i % 2 == 0) {
        while (taken.contains(ranked.next[a].index())) ++a;
        CHECK(half.next[i].index() == ranked.next[a].index());
      }
      taken.insert(half.next[i].index());
    }
    CHECK(changed_knob(half.next[1], best) != changed_knob(half.next[0], best));
  }
  // The acquisition alone lets a near-neutral knob (z) take several of the first picks.
  CHECK(ranked_repeats);
}

TEST_CASE("recombination: once the best stalls, crossings of the incumbent with other parents") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = small_model().without_plateaus();
  o.first_batch = 8;
  o.min_batch = 8;           // rounds of 8
  o.incumbent_share = 0.25;  // 2 of the round of 8
  o.incumbent_max_share = 0.25;
  auto round = [&](double share, int stall) {
    ModelPolicyOptions x = o;
    x.recombine_share = share;  // 2 of the round of 8, after the trust region's
    x.recombine_stall = stall;
    ModelPolicy p(task.space(), features, x);
    p.reset(5);
    std::vector<Config> first = p.propose(32);
    REQUIRE(first.size() == 8);
    p.observe(first, m.measure(first));
    std::vector<Config> next = p.propose(32);
    REQUIRE(next.size() == 8);
    return std::make_pair(first, next);
  };
  auto [first, off] = round(0, 0);
  auto [first_on, on] = round(0.25, 0);
  auto [first_late, late] = round(0.25, 1);
  REQUIRE(indices(first_on) == indices(first));
  REQUIRE(indices(first_late) == indices(first));
  // The first plan after the first batch has a new best: with recombine_stall 1 nothing
  // changes.
  CHECK(indices(late) == indices(off));
  CHECK(indices(on) != indices(off));
  std::vector<MeasureResult> results = m.measure(first);
  size_t best = 0;
  for (size_t i = 1; i < first.size(); ++i) {
    if (throughput_of(results[i]) > throughput_of(results[best])) best = i;
  }
  // Picks 2 and 3 are untried, differ from the incumbent, and take every knob from the
  // incumbent or from one other measured configuration (which differs in at least two).
  for (size_t i = 2; i < 4; ++i) {
    const Config& c = on[i];
    CHECK(knob_changes(c, first[best]) >= 1);
    bool crossing = false;
    for (size_t q = 0; q < first.size(); ++q) {
      CHECK(c.index() != first[q].index());
      if (q == best || knob_changes(first[q], first[best]) < 2) continue;
      bool from_both = true;
      for (size_t k = 0; k < c.entities().size(); ++k) {
        from_both &= c.entities()[k] == first[best].entities()[k] ||
                     c.entities()[k] == first[q].entities()[k];
      }
      crossing |= from_both;
    }
    CHECK(crossing);
  }
}

namespace {

// A policy whose second basin takes half of the trust region from the first plan on.
ModelPolicyOptions basin_model(double share) {
  ModelPolicyOptions o = small_model();
  o.basin_share = share;
  o.basin_stall = 0;
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
    o.basin_stall = 1;  // one plan without enough gain
    o.basin_gain = basin_gain;
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

namespace {

// The first batch of a model policy that draws every choice knob toward its bounds.
std::vector<Config> first_toward_bounds(const ConfigSpace& space, double bias, uint64_t seed) {
  test::ValueFeatures features{space};
  ModelPolicyOptions o = small_model();
  o.bound_bias = bias;
  ModelPolicy p(space, features, o);
  p.reset(seed);
  return p.propose(8);
}

}  // namespace

TEST_CASE("first batch toward the bounds: the valid corners first, then anywhere") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  // x * y <= 1024 leaves six valid corners: (x, y) of (1, 1), (1, 128), (128, 1); z 0 or 7.
  auto corner = [](const Config& c) {
    auto bound = [](int64_t v, int64_t hi) { return v == 1 || v == hi; };
    return bound(c.get(0), 128) && bound(c.get(1), 128) && (c.get(2) == 0 || c.get(2) == 7);
  };
  int uniform_corners = 0;
  for (uint64_t seed : {1, 2, 3}) {
    std::vector<Config> first = first_toward_bounds(space, 1.0, seed);
    REQUIRE(first.size() == 8);
    std::set<uint64_t> distinct;
    for (size_t i = 0; i < 6; ++i) {
      INFO("seed " << seed << " proposal " << i);
      CHECK(corner(first[i]));
      distinct.insert(first[i].index());
    }
    CHECK(distinct.size() == 6);
    // The corners used up, the rest are drawn anywhere.
    CHECK_FALSE(corner(first[6]));
    for (const Config& c : first_toward_bounds(space, 0.0, seed)) uniform_corners += corner(c);
  }
  // Uniform draws (bound_bias 0) hit a corner about once in 80.
  CHECK(uniform_corners <= 2);
}

TEST_CASE("first batch toward the bounds: a choice knob's bounds by value, split knobs uniform") {
  ConfigSpace space;
  space.define_choice("u", {4, 1, 16, 2});
  space.define_split("s", 64, 2);  // 7 entities: 1x64 .. 64x1
  for (uint64_t seed : {1, 2, 3}) {
    std::vector<Config> first = first_toward_bounds(space, 1.0, seed);
    REQUIRE(first.size() == 8);
    int split_ends = 0;
    for (const Config& c : first) {
      INFO("seed " << seed);
      CHECK((c.get(0) == 1 || c.get(0) == 16));
      split_ends += c.entities()[1] == 0 || c.entities()[1] == 6;
    }
    // Uniform: 2 of 7 entities at an end; toward the bounds the first four draws would all be.
    CHECK(split_ends <= 3);
  }
}
