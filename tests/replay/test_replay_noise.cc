// --noise draws a repetition from a hash of (seed, configuration, repetition), not from a
// stream: a replayed answer does not depend on what else the measurer answered, so noisy
// suites give the same records on any number of MPI ranks.

#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "src/replay/kt_cache.h"
#include "src/replay/replay_measurer.h"

using namespace cutune;

namespace {

replay::ReplayTask four_configs() {
  return replay::ReplayTask::from_cache(replay::parse_kt_cache(R"({
    "device_name": "Tiny GPU", "kernel_name": "k", "problem_size": [64],
    "tune_params_keys": ["bx"], "tune_params": {"bx": [1, 2, 3, 4]},
    "cache": {
      "1": {"bx": 1, "time": 2.0, "times": [1, 2, 3, 4, 5, 6, 7, 8]},
      "2": {"bx": 2, "time": 2.0, "times": [11, 12, 13, 14, 15, 16, 17, 18]},
      "3": {"bx": 3, "time": 2.0, "times": [21, 22, 23, 24, 25, 26, 27, 28]},
      "4": {"bx": 4, "time": 2.0, "times": [31, 32, 33, 34, 35, 36, 37, 38]}
    }})"));
}

}  // namespace

TEST_CASE("noisy replay: an answer depends on seed, configuration and repetition only") {
  const replay::ReplayTask task = four_configs();
  const ConfigSpace& space = task.space();
  std::vector<Config> forward, backward;
  for (uint64_t i = 0; i < space.size(); ++i) forward.push_back(space.get(i));
  backward.assign(forward.rbegin(), forward.rend());

  // Two measurers (two ranks) answering in different orders and interleavings agree.
  replay::ReplayMeasurer a(task, /*noise=*/true, /*seed=*/7), b(task, true, 7);
  std::vector<double> first_a, first_b(forward.size());
  for (const replay::ReplayMeasurement& m : a.measure(forward)) first_a.push_back(m.time_ms);
  b.measure(std::vector<Config>{forward[2]});
  first_b[2] = 0;  // b answered configuration 2 already: its next answer is repetition 1
  const std::vector<replay::ReplayMeasurement> rb = b.measure(backward);
  for (size_t k = 0; k < backward.size(); ++k) first_b[backward.size() - 1 - k] = rb[k].time_ms;
  for (size_t i : {0, 1, 3}) CHECK(first_a[i] == first_b[i]);
  replay::ReplayMeasurer c(task, true, 7);
  CHECK(c.measure(forward[2]).time_ms == first_a[2]);  // repetition 0 again
  CHECK(c.measure(forward[2]).time_ms == first_b[2]);  // repetition 1, as b's second answer

  // Every answer is one of the configuration's own repetitions.
  for (size_t i = 0; i < forward.size(); ++i) {
    CHECK(first_a[i] >= 10.0 * double(i) + 1);
    CHECK(first_a[i] <= 10.0 * double(i) + 8);
  }
}

TEST_CASE("noisy replay: the draw is uniform over the repetitions across seeds") {
  std::vector<int> hits(8, 0);
  for (uint64_t seed = 0; seed < 8000; ++seed) ++hits[replay::noise_draw(seed, 5, 0, 8)];
  for (int h : hits) CHECK((h > 850 && h < 1150));  // 1000 expected, sd about 30
  // Repetitions of one configuration under one seed are drawn afresh.
  std::set<size_t> reps;
  for (uint64_t r = 0; r < 64; ++r) reps.insert(replay::noise_draw(1, 5, r, 8));
  CHECK(reps.size() == 8);
}
