// The neighbourhood enumerator (src/tune/model/neighbourhood.h) against a brute-force walk of
// the synthetic replay space (x, y, z of 8 values each; valid where x * y <= 1024).

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "src/tune/model/neighbourhood.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;
using test::indices;
using test::knob_changes;

namespace {

std::vector<Config> every_valid(const ConfigSpace& space) {
  std::vector<Config> out;
  for (uint64_t i = 0; i < space.size(); ++i) {
    Config c = space.get(i);
    if (space.is_valid(c)) out.push_back(c);
  }
  return out;
}

// Indices of the valid configurations whose least number of changes from `centres` is d,
// none in `exclude`.
std::set<uint64_t> at_distance(const ConfigSpace& space, const std::vector<Config>& centres,
                               const std::unordered_set<uint64_t>& exclude, int d) {
  std::set<uint64_t> out;
  for (const Config& c : every_valid(space)) {
    int least = 99;
    for (const Config& centre : centres) least = std::min(least, knob_changes(c, centre));
    if (least == d && !exclude.contains(c.index())) out.insert(c.index());
  }
  return out;
}

std::set<uint64_t> as_set(const std::vector<Config>& cs) {
  std::vector<uint64_t> v = indices(cs);
  return {v.begin(), v.end()};
}

}  // namespace

TEST_CASE("rings: one and two knob changes from a centre, valid and untried, knob by knob") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  const Config centre(&space, {4, 2, 5});  // x 16, y 4, z 5
  const std::unordered_set<uint64_t> none = {centre.index()};
  Rings r = neighbour_rings(space, std::span(&centre, 1), none, 2);
  // x: 7 others (16 * 4 <= 1024 for every x), y: 6 (y 128 would make 2048), z: 7.
  CHECK(r.radius1.size() == 20);
  CHECK(as_set(r.radius1) == at_distance(space, {centre}, none, 1));
  CHECK(as_set(r.radius2) == at_distance(space, {centre}, none, 2));
  CHECK(as_set(r.radius1).size() == r.radius1.size());  // each once
  // Knob by knob, each in value order: the first seven change x, in increasing position.
  for (size_t i = 0; i + 1 < 7; ++i) {
    CHECK(r.radius1[i].entities()[0] < r.radius1[i + 1].entities()[0]);
    CHECK(r.radius1[i].entities()[1] == 2);
  }
  // Radius 1 only.
  Rings one = neighbour_rings(space, std::span(&centre, 1), none, 1);
  CHECK(indices(one.radius1) == indices(r.radius1));
  CHECK(one.radius2.empty());
}

TEST_CASE("rings: what is excluded is left out, and several centres share one set") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  const std::vector<Config> centres = {Config(&space, {4, 2, 5}), Config(&space, {4, 3, 5})};
  std::unordered_set<uint64_t> exclude = {centres[0].index(), centres[1].index()};
  exclude.insert(Config(&space, {0, 2, 5}).index());
  exclude.insert(Config(&space, {0, 0, 5}).index());
  Rings r = neighbour_rings(space, centres, exclude, 2);
  std::set<uint64_t> all = as_set(r.radius1);
  for (const Config& c : r.radius2) CHECK(all.insert(c.index()).second);  // never twice
  CHECK(all.size() == r.radius1.size() + r.radius2.size());
  std::set<uint64_t> expected = at_distance(space, centres, exclude, 1);
  for (uint64_t i : at_distance(space, centres, exclude, 2)) expected.insert(i);
  CHECK(all == expected);
  for (uint64_t i : exclude) CHECK_FALSE(all.contains(i));
  // The first centre's whole neighbourhood comes before the second's: a configuration one
  // change from the second and two from the first is in radius 2.
  const Config both(&space, {5, 3, 5});
  CHECK(knob_changes(both, centres[0]) == 2);
  CHECK(knob_changes(both, centres[1]) == 1);
  CHECK(as_set(r.radius2).contains(both.index()));
}

TEST_CASE("best_positions: the highest scores first, ties by the lower index") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  const std::vector<Config> cs = {Config(&space, {3, 0, 0}), Config(&space, {1, 0, 0}),
                                  Config(&space, {2, 0, 0}), Config(&space, {0, 0, 0})};
  const std::vector<float> s = {0.5f, 2.0f, 0.5f, 1.0f};
  CHECK(best_positions(cs, s, 3) == std::vector<size_t>{1, 3, 2});  // {2,0,0} before {3,0,0}
  CHECK(best_positions(cs, s, 10).size() == 4);
  const ScoreFunction score = [&](const std::vector<Config>& asked) {
    std::vector<float> out;
    for (const Config& c : asked) out.push_back(-float(c.entities()[0]));
    return out;
  };
  CHECK(indices(best_by(cs, score, 2)) == indices({cs[3], cs[1]}));
  CHECK(best_by(cs, score, 0).empty());
}
