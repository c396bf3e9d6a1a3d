// The model policy's first batch (issue 11, early phase): a start that covers every knob's
// values, and random slots in the first rounds after a small first batch.

#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

using test::small_model;

std::vector<uint64_t> indices(const std::vector<Config>& cs) {
  std::vector<uint64_t> out;
  for (const Config& c : cs) out.push_back(c.index());
  return out;
}

}  // namespace

TEST_CASE("a covering start holds every value of every knob it can") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ModelPolicyOptions o = small_model();
  o.first_batch = 16;
  o.cover_start = true;
  ModelPolicy p(task.space(), features, o);
  for (uint64_t seed : {1, 2, 3}) {
    p.reset(seed);
    std::vector<Config> first = p.propose(32);
    REQUIRE(first.size() == 16);  // the first batch, not the caller's
    std::set<uint64_t> distinct;
    std::map<int, std::map<int32_t, int>> held;  // knob -> entity -> times in the start
    for (const Config& c : first) {
      CHECK(task.space().is_valid(c));
      distinct.insert(c.index());
      for (int k = 0; k < 3; ++k) ++held[k][c.entities()[k]];
    }
    CHECK(distinct.size() == 16);
    // Every knob has 8 values and each is held (16 random draws miss one of z's 8 values 65%
    // of the time), none more than three times. x and y are constrained (x * y <= 1024), but a
    // pool of 128 holds each of their values often enough.
    for (int k = 0; k < 3; ++k) {
      CHECK(held[k].size() == 8);
      for (const auto& [entity, times] : held[k]) CHECK(times <= 3);
    }
  }
  // A plain random first batch of 16 misses a value of some knob for at least one of the seeds.
  o.cover_start = false;
  ModelPolicy plain(task.space(), features, o);
  bool missed = false;
  for (uint64_t seed : {1, 2, 3}) {
    plain.reset(seed);
    std::map<int, std::set<int32_t>> values;
    for (const Config& c : plain.propose(32)) {
      for (int k = 0; k < 3; ++k) values[k].insert(c.entities()[k]);
    }
    for (int k = 0; k < 3; ++k) missed |= values[k].size() < 8;
  }
  CHECK(missed);
  o.cover_start = true;
  // Deterministic for a seed; another seed draws another start.
  p.reset(1);
  std::vector<uint64_t> a = indices(p.propose(32));
  p.reset(1);
  CHECK(indices(p.propose(32)) == a);
  p.reset(4);
  CHECK(indices(p.propose(32)) != a);

  // Without first_batch the start is the caller's whole batch.
  o.first_batch = 0;
  ModelPolicy whole(task.space(), features, o);
  whole.reset(1);
  CHECK(whole.propose(24).size() == 24);
}

TEST_CASE("random slots keep a share of the first rounds random until the total is reached") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  // With epsilon 0 and no trust region, a round's proposals are the annealed ones and the
  // random slots; the annealed ones score high on the model, the random ones anywhere.
  ModelPolicyOptions o = small_model();
  o.epsilon = 0;
  o.incumbent_share = 0;
  o.first_batch = 8;
  o.round_fraction = 0.5;  // rounds of n/2 from 8, as the sizes below
  o.min_batch = 8;
  o.random_total = 24;
  auto run = [&](int random_total) {
    o.random_total = random_total;
    ModelPolicy p(task.space(), features, o);
    p.reset(9);
    std::vector<Config> all;
    std::vector<int> sizes;
    for (int round = 0; round < 5; ++round) {
      std::vector<Config> b = p.propose(32);
      sizes.push_back(static_cast<int>(b.size()));
      p.observe(b, m.measure(b));
      all.insert(all.end(), b.begin(), b.end());
    }
    return std::pair{all, sizes};
  };
  auto [with, sizes] = run(24);
  auto [without, sizes_without] = run(0);
  auto [first_only, sizes_first_only] = run(8);  // no more than the first batch: no slots
  // Rounds are unchanged: 8 random, then clamp(n / 2, 8, 32) after 8, 16, 24, 36 records.
  CHECK(sizes == std::vector<int>{8, 8, 8, 12, 18});
  CHECK(sizes_without == sizes);
  // The first batch is the same random draw; the rounds after it differ (up to half random).
  const std::vector<uint64_t> a = indices(with), b = indices(without);
  CHECK(std::vector<uint64_t>(a.begin(), a.begin() + 8) ==
        std::vector<uint64_t>(b.begin(), b.begin() + 8));
  CHECK(a != b);
  CHECK(indices(first_only) == b);
  std::set<uint64_t> distinct(a.begin(), a.end());
  CHECK(distinct.size() == a.size());  // no configuration proposed twice
  // Deterministic for a seed.
  CHECK(indices(run(24).first) == a);
}
