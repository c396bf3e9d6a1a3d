// The start of the model policy (src/tune/model/start_design.h): a small random first batch
// drawn toward the knobs' bounds, then rounds of a share of the records.

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <unordered_set>

#include "src/tune/model/model_policy.h"
#include "src/tune/model/start_design.h"
#include "src/tune/search_policy.h"
#include "src/tune/replay_measurer_adapter.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

TEST_CASE("a smaller random first batch, then rounds of a share of the records from a least size") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter m(task);
  ModelPolicyOptions o = test::small_model();
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

namespace {

// The first batch of a model policy that draws every choice knob toward its bounds.
std::vector<Config> first_toward_bounds(const ConfigSpace& space, double bias, uint64_t seed) {
  test::ValueFeatures features{space};
  ModelPolicyOptions o = test::small_model();
  o.epsilon = 0;
  o.first_batch = 0;
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

TEST_CASE("spread_best takes the ranking's best that differ in enough knobs, then relaxes") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  std::mt19937_64 rng(2);
  std::vector<Config> ranking;
  std::unordered_set<uint64_t> seen;
  while (ranking.size() < 40) {
    auto c = draw_unvisited(space, seen, rng);
    REQUIRE(c);
    seen.insert(c->index());
    ranking.push_back(*c);
  }
  // Near-copies of the best come next in the ranking: one knob changed.
  std::vector<Config> with_copies{ranking[0]};
  for (int v = 0; v < space.knobs()[0].cardinality(); ++v) {
    std::vector<int32_t> e = ranking[0].entities();
    if (e[0] == v) continue;
    e[0] = v;
    Config copy(&space, e);
    if (!seen.contains(copy.index())) with_copies.push_back(copy);
  }
  const size_t copies = with_copies.size() - 1;
  REQUIRE(copies >= 1);
  with_copies.insert(with_copies.end(), ranking.begin() + 1, ranking.end());
  auto changes = [](const Config& a, const Config& b) {
    int n = 0;
    for (size_t k = 0; k < a.entities().size(); ++k) n += a.entities()[k] != b.entities()[k];
    return n;
  };
  const std::vector<Config> spread = spread_best(with_copies, 4, 2);
  REQUIRE(spread.size() == 4);
  CHECK(spread[0].index() == with_copies[0].index());  // the best first
  for (size_t i = 0; i < spread.size(); ++i) {
    for (size_t j = 0; j < i; ++j) CHECK(changes(spread[i], spread[j]) >= 2);
  }
  // Asked for more than stand apart: the requirement drops, down to the whole ranking.
  CHECK(spread_best(with_copies, int(with_copies.size()), 2).size() == with_copies.size());
  CHECK(spread_best(with_copies, 3, 0).front().index() == with_copies[0].index());
}
