#include <catch2/catch.hpp>

#include <set>

#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

using test::small_model;

struct Fixture {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};

  std::unique_ptr<SearchPolicy> make(TunerKind kind) {
    return make_search_policy(kind, task.space(), &features, small_model());
  }

  // The indices proposed over `rounds` batches of `batch`, observing each batch's results.
  std::vector<uint64_t> run(SearchPolicy& p, uint64_t seed, int rounds, int batch) {
    ReplayMeasurerAdapter m(task);
    p.reset(seed);
    std::vector<uint64_t> out;
    for (int r = 0; r < rounds; ++r) {
      std::vector<Config> b = p.propose(batch);
      if (b.empty()) break;
      for (const Config& c : b) out.push_back(c.index());
      p.observe(b, m.measure(b));
    }
    return out;
  }
};

const TunerKind kAll[] = {TunerKind::random, TunerKind::grid, TunerKind::genetic, TunerKind::xgb};

}  // namespace

TEST_CASE("tuner names parse, unknown names are rejected") {
  for (TunerKind k : kAll) CHECK(parse_tuner_kind(to_string(k)) == k);
  CHECK_THROWS_AS(parse_tuner_kind("annealing"), std::invalid_argument);
}

TEST_CASE("every policy proposes each valid configuration once, until the space is exhausted") {
  Fixture f;
  const uint64_t valid = *f.task.space().count_valid();
  for (TunerKind kind : kAll) {
    INFO("tuner " << to_string(kind));
    auto p = f.make(kind);
    std::vector<uint64_t> all = f.run(*p, 7, 1000, 37);
    std::set<uint64_t> distinct(all.begin(), all.end());
    CHECK(distinct.size() == all.size());
    CHECK(all.size() == valid);
    for (uint64_t i : all) CHECK(f.task.space().is_valid(f.task.space().get(i)));
    CHECK(p->propose(5).empty());
  }
}

TEST_CASE("policies never propose configurations observed from elsewhere (a resumed log)") {
  Fixture f;
  ReplayMeasurerAdapter m(f.task);
  for (TunerKind kind : kAll) {
    INFO("tuner " << to_string(kind));
    auto p = f.make(kind);
    p->reset(1);
    std::vector<Config> old;
    for (uint64_t i = 0; i < f.task.space().size() && old.size() < 100; i += 3) {
      Config c = f.task.space().get(i);
      if (f.task.space().is_valid(c)) old.push_back(c);
    }
    p->observe(old, m.measure(old));
    std::set<uint64_t> seen;
    for (const Config& c : old) seen.insert(c.index());
    for (int r = 0; r < 4; ++r) {
      std::vector<Config> b = p->propose(24);
      for (const Config& c : b) CHECK(seen.insert(c.index()).second);
      p->observe(b, m.measure(b));
    }
  }
}

TEST_CASE("the same seed gives the same proposals, another seed others") {
  Fixture f;
  for (TunerKind kind : kAll) {
    INFO("tuner " << to_string(kind));
    auto a = f.make(kind);
    auto b = f.make(kind);
    std::vector<uint64_t> run_a = f.run(*a, 42, 4, 24);
    CHECK(run_a == f.run(*b, 42, 4, 24));
    CHECK(run_a == f.run(*a, 42, 4, 24));  // reset() forgets everything
    if (kind != TunerKind::grid) CHECK(run_a != f.run(*b, 43, 4, 24));
  }
}

TEST_CASE("the model-based tuner refits and finds the synthetic optimum quickly") {
  // 432 configurations, one optimum: random search finds it within 128 trials with probability
  // 128/432 (about 0.3), so in all of five seeds with probability under 0.3%.
  Fixture f;
  const uint64_t best = f.task.summary().best->index();
  const uint64_t configs = f.task.space().size();
  REQUIRE(configs >= 400);
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    INFO("seed " << seed);
    auto policy = std::make_unique<ModelPolicy>(f.task.space(), f.features, small_model());
    // Rounds of 32 trials until 128 (the policy's own rounds are smaller early).
    std::vector<uint64_t> run = f.run(*policy, seed, 64, 32);
    run.resize(std::min<size_t>(run.size(), 128));
    CHECK(policy->fits() >= 2);
    CHECK(std::find(run.begin(), run.end(), best) != run.end());
  }
}

TEST_CASE("the ensemble's members differ, and its acquisition is deterministic under a seed") {
  Fixture f;
  ModelPolicyOptions o = small_model();
  o.ensemble = 4;
  o.gp_until = 0;  // the ensemble's acquisition from the first fit on
  ModelPolicy p(f.task.space(), f.features, o);
  ModelPolicy q(f.task.space(), f.features, o);
  std::vector<uint64_t> run_p = f.run(p, 7, 3, 32);
  CHECK(run_p == f.run(q, 7, 3, 32));
  CHECK(p.fits() >= 2);

  std::vector<Config> all;
  for (uint64_t i = 0; i < f.task.space().size(); ++i) all.push_back(f.task.space().get(i));
  std::vector<std::vector<float>> z = p.surrogate().member_scores(all);
  REQUIRE(z.size() == 4);
  CHECK(z == q.surrogate().member_scores(all));
  for (size_t k = 1; k < z.size(); ++k) CHECK(z[k] != z[0]);  // bootstrap resamples differ
  std::vector<float> s = p.predict(all);
  CHECK(s == q.predict(all));
  // mean + kappa * std is at least the members' mean, and above it somewhere.
  bool above = false;
  for (size_t i = 0; i < all.size(); ++i) {
    double mean = 0;
    for (const auto& m : z) mean += m[i] / z.size();
    CHECK(s[i] >= mean - 1e-4);
    above |= s[i] > mean + 1e-3;
  }
  CHECK(above);
}
