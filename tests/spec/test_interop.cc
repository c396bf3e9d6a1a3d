// Kernel Tuner caches and T4 results written from a tuning log read back exactly.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "src/replay/kt_cache.h"
#include "src/spec/interop.h"

using namespace cutune;
using namespace cutune::spec;
using Catch::Matchers::Contains;

namespace {

Record make_record(int64_t bx, int64_t tile, MeasureStatus status, std::vector<double> times) {
  Record r;
  r.task = TaskKey{"spec:conv2d", {4096, 4096}, "float32", "sm_90", "NVIDIA H200", "conv2d"};
  r.config_index = static_cast<uint64_t>(bx * 10 + tile);
  r.knobs = {{"block_size_x", bx}, {"tile_size_x", tile}};
  r.result.status = status;
  r.result.times_s = std::move(times);
  r.result.compile_s = 0.25;
  r.result.timer = r.result.times_s.empty() ? TimerKind::none : TimerKind::cupti;
  if (status != MeasureStatus::ok) r.result.error = "failed";
  r.timestamp = "2026-12-01T10:00:00.000Z";
  return r;
}

std::vector<Record> sample_log() {
  return {make_record(32, 1, MeasureStatus::ok, {1.25e-4, 1.3e-4, 1.2e-4}),
          make_record(64, 2, MeasureStatus::ok, {0.987654321e-4}),
          make_record(128, 4, MeasureStatus::compile_error, {}),
          make_record(16, 1, MeasureStatus::runtime_error, {}),
          make_record(32, 2, MeasureStatus::wrong_answer, {2e-4})};
}

}  // namespace

TEST_CASE("a log written as a Kernel Tuner cache reads back exactly") {
  std::vector<Record> log = sample_log();
  replay::KtCache cache = records_to_kt_cache(log);
  const auto path = std::filesystem::temp_directory_path() / "cutune_test_interop_cache.json";
  {
    std::ofstream out(path);
    out << kt_cache_to_json(cache).dump(1);
  }
  replay::KtCache back = replay::load_kt_cache(path.string());
  std::filesystem::remove(path);
  CHECK(back.device_name == "NVIDIA H200");
  CHECK(back.kernel_name == "conv2d");
  CHECK(back.problem_size == std::vector<int64_t>{4096, 4096});
  CHECK(back.tune_params_keys == cache.tune_params_keys);
  CHECK(back.tune_params == std::vector<std::vector<int64_t>>{{16, 32, 64, 128}, {1, 2, 4}});
  REQUIRE(back.entries.size() == log.size());
  CHECK(back.valid_count() == 2);
  for (size_t i = 0; i < log.size(); ++i) {
    const replay::KtEntry& a = cache.entries[i];
    const replay::KtEntry& b = back.entries[i];
    CHECK(a.values == b.values);
    CHECK(a.valid == b.valid);
    CHECK(a.times_ms == b.times_ms);  // exact: doubles are written to round-trip
    if (a.valid)
      CHECK(a.time_ms == b.time_ms);
    else
      CHECK(a.error == b.error);
  }
  CHECK(back.entries[0].times_ms == std::vector<double>{1.25e-4 * 1e3, 1.3e-4 * 1e3, 1.2e-4 * 1e3});
  CHECK(back.entries[2].error == "CompilationFailedConfig");
  CHECK(back.entries[3].error == "RuntimeFailedConfig");
  CHECK(back.entries[4].error == "RuntimeFailedConfig");  // a wrong answer is not a valid time
}

TEST_CASE("a log written as T4 results reads back exactly") {
  std::vector<Record> log = sample_log();
  nlohmann::json t4 = nlohmann::json::parse(records_to_t4(log).dump());
  CHECK(t4["schema_version"] == "1.0.0");
  std::vector<T4Result> back = parse_t4(t4);
  REQUIRE(back.size() == log.size());
  const char* invalidity[] = {"correct", "correct", "compile", "runtime", "correctness"};
  for (size_t i = 0; i < log.size(); ++i) {
    T4Result want;
    want.configuration = log[i].knobs;
    want.invalidity = invalidity[i];
    for (double t : log[i].result.times_s) want.runtimes_ms.push_back(t * 1e3);
    want.compile_ms = 0.25 * 1e3;
    want.timestamp = log[i].timestamp;
    CHECK(back[i] == want);
  }
  CHECK(t4["results"][0]["measurements"][0]["unit"] == "ms");
}

TEST_CASE("template logs with split knobs and mixed logs are refused with one line") {
  std::vector<Record> log = sample_log();
  log[1].knobs["tile_m"] = {2, 4, 8};
  try {
    records_to_kt_cache(log);
    FAIL("no error");
  } catch (const RecordError& e) {
    CHECK_THAT(e.what(), Contains("not an integer"));
  }
  log = sample_log();
  log[2].task.device_name = "other";
  CHECK_THROWS_AS(records_to_t4(log), RecordError);
  CHECK_THROWS_AS(records_to_kt_cache({}), RecordError);
}
