#include <catch2/catch.hpp>

#include <chrono>

#include "src/tune/replay_measurer_adapter.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

TEST_CASE("replay adapter: ok results carry the time in seconds, failures are invalid") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(replay::parse_kt_cache(R"({
    "device_name": "Tiny GPU", "kernel_name": "k", "problem_size": [64],
    "tune_params_keys": ["bx", "by"],
    "tune_params": {"bx": [16, 32], "by": [1, 2]},
    "cache": {
      "16,1": {"bx": 16, "by": 1, "time": 2.0, "times": [1.5, 2.5]},
      "32,1": {"bx": 32, "by": 1, "time": 1.0, "times": [0.9, 1.1]},
      "16,2": {"bx": 16, "by": 2, "time": "RuntimeFailedConfig"}
    }})"));
  ReplayMeasurerAdapter adapter(task);
  CHECK(adapter.device_name() == "Tiny GPU");
  const ConfigSpace& space = task.space();
  auto at = [&](int64_t bx, int64_t by) {
    return space.from_json(nlohmann::json{{"knobs", {{"bx", bx}, {"by", by}}}});
  };
  std::vector<MeasureResult> r = adapter.measure({at(16, 1), at(32, 1), at(16, 2), at(32, 2)});
  REQUIRE(r.size() == 4);
  CHECK(r[0].status == MeasureStatus::ok);
  CHECK(r[0].timer == TimerKind::replay);
  CHECK(r[0].mean_s() == Approx(2.0e-3));
  CHECK(r[0].error.empty());
  CHECK(r[1].mean_s() == Approx(1.0e-3));
  CHECK(r[2].status == MeasureStatus::invalid);
  CHECK(r[2].error == "RuntimeFailedConfig");
  CHECK(r[2].times_s.empty());
  CHECK(r[3].status == MeasureStatus::invalid);
  CHECK(r[3].error.find("present in the cache") != std::string::npos);

  ReplayMeasurerAdapter noisy(task, /*noise=*/true, /*seed=*/3);
  double t = noisy.measure({at(16, 1)})[0].mean_s();
  CHECK((t == Approx(1.5e-3) || t == Approx(2.5e-3)));
}

TEST_CASE("replay adapter: --replay-cost-ms makes every answer take that long") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(replay::parse_kt_cache(R"({
    "device_name": "Tiny GPU", "kernel_name": "k", "problem_size": [64],
    "tune_params_keys": ["bx"], "tune_params": {"bx": [16, 32]},
    "cache": {"16": {"bx": 16, "time": 2.0}, "32": {"bx": 32, "time": 1.0}}})"));
  ReplayMeasurerAdapter slow(task, false, 0, /*cost_ms=*/20);
  ReplayMeasurerAdapter fast(task);
  const std::vector<Config> batch = {task.space().get(0), task.space().get(1), task.space().get(0)};
  const auto start = std::chrono::steady_clock::now();
  const std::vector<MeasureResult> r = slow.measure(batch);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(elapsed >= 3 * 0.020);      // a lower bound: the sleep happened for each configuration
  CHECK(r == fast.measure(batch));  // and the answers are those of the free adapter
}
