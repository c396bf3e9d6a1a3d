#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/dataset_skip.h"
#include "src/replay/replay_measurer.h"
#include "src/replay/replay_space.h"

using namespace cutune::replay;
using cutune::Config;

namespace {

const std::string kData = CUTUNE_SOURCE_DIR "/../shared/datasets";

const char* kTinyCache = R"({
  "device_name": "Tiny GPU", "kernel_name": "k", "problem_size": [64],
  "tune_params_keys": ["bx", "by"],
  "tune_params": {"bx": [16, 32], "by": [1, 2]},
  "cache": {
    "16,1": {"bx": 16, "by": 1, "time": 2.0, "times": [1.5, 2.5]},
    "32,1": {"bx": 32, "by": 1, "time": 1.0, "times": [0.9, 1.1]},
    "16,2": {"bx": 16, "by": 2, "time": "RuntimeFailedConfig"}
  }
})";

bool have(const std::string& path) {
  cutune::test::require_dataset_path(path);  // or skip the test case visibly
  return true;
}

Config config_of(const ReplayTask& task, std::vector<std::pair<std::string, int64_t>> knobs) {
  nlohmann::json j;
  for (const auto& [k, v] : knobs) j["knobs"][k] = v;
  return task.space().from_json(j);
}

}  // namespace

TEST_CASE("tiny cache: space, summary and measurer") {
  ReplayTask task = ReplayTask::from_cache(parse_kt_cache(kTinyCache));
  CHECK(task.space().size() == 4);
  CHECK(task.space().count_valid() == 3);
  Config missing = config_of(task, {{"bx", 32}, {"by", 2}});
  CHECK(task.space().violation(missing) == "present in the cache");
  CHECK(task.find(missing) == nullptr);
  ReplaySummary s = task.summary();
  CHECK(s.points == 3);
  CHECK(s.measured == 3);
  CHECK(s.measured_valid == 2);
  CHECK(s.best_time_ms == 1.0);
  REQUIRE(s.best.has_value());
  CHECK(s.best->get("bx") == 32);
  CHECK(task.sorted_valid_times() == std::vector<double>{1.0, 2.0});

  ReplayMeasurer mean(task);
  std::vector<Config> batch = {config_of(task, {{"bx", 16}, {"by", 1}}),
                               config_of(task, {{"bx", 16}, {"by", 2}}), missing};
  auto results = mean.measure(batch);
  REQUIRE(results.size() == 3);
  CHECK(results[0].valid);
  CHECK(results[0].time_ms == 2.0);
  CHECK(results[0].times_ms == std::vector<double>{1.5, 2.5});
  CHECK_FALSE(results[1].valid);
  CHECK(results[1].error == "RuntimeFailedConfig");
  CHECK_FALSE(results[2].valid);
  CHECK(mean.measurements() == 3);

  ReplayMeasurer noisy(task, true, 42);
  std::set<double> drawn;
  for (int i = 0; i < 64; ++i) {
    auto m = noisy.measure(batch[0]);
    REQUIRE(m.valid);
    CHECK((m.time_ms == 1.5 || m.time_ms == 2.5));
    drawn.insert(m.time_ms);
  }
  CHECK(drawn.size() == 2);
  ReplayMeasurer same_seed(task, true, 42);
  ReplayMeasurer again(task, true, 42);
  for (int i = 0; i < 16; ++i)
    CHECK(same_seed.measure(batch[0]).time_ms == again.measure(batch[0]).time_ms);
}

TEST_CASE("gemm RTX 3090 replay space is exactly the cache") {
  const std::string path = kData + "/gemm/RTX_3090.json.gz";
  if (!have(path)) return;
  ReplayTask task = ReplayTask::from_cache(load_kt_cache(path));
  CHECK(task.entries_outside_space() == 0);
  CHECK(task.space().count_valid() == 17956);
  ReplaySummary s = task.summary();
  CHECK(s.points == 17956);
  CHECK(s.measured_valid == 17956);
  auto times = task.sorted_valid_times();
  REQUIRE(times.size() == 17956);
  CHECK(times.front() == s.best_time_ms);
  std::printf("gemm/RTX_3090: optimum %.4f ms at %s\n", s.best_time_ms,
              s.best->to_string().c_str());
  // Every cache entry is found again from its configuration.
  ReplayMeasurer measurer(task);
  const auto& entry = task.cache().entries[1234];
  nlohmann::json j;
  for (size_t k = 0; k < entry.values.size(); ++k)
    j["knobs"][task.cache().tune_params_keys[k]] = entry.values[k];
  auto m = measurer.measure(task.space().from_json(j));
  CHECK(m.valid);
  CHECK(m.time_ms == entry.time_ms);
}

TEST_CASE("convolution_milo A4000: cache space and T1 spec space agree") {
  const std::string path = kData + "/convolution_milo/A4000.json.gz";
  const std::string spec_path = kData + "/spaces/convolution_milo.json";
  if (!have(path) || !have(spec_path)) return;
  KtCache cache = load_kt_cache(path);
  ReplayTask by_cache = ReplayTask::from_cache(cache);
  CHECK(by_cache.space().count_valid() == 4362);
  ReplaySummary s = by_cache.summary();
  CHECK(s.points == 4362);
  CHECK(s.measured_valid == 4201);
  CHECK(by_cache.sorted_valid_times().size() == 4201);

  T1Spec spec = load_t1_spec(spec_path);
  CHECK(spec.parameters.size() == 10);
  CHECK(spec.conditions.size() == 4);
  ReplayTask by_spec = ReplayTask::from_spec(cache, spec);
  CHECK(by_spec.entries_outside_space() == 0);
  CHECK(by_spec.space().size() == 10240);
  ReplaySummary t = by_spec.summary();
  CHECK(t.points == 4362);    // T1-valid configurations
  CHECK(t.measured == 4362);  // all of them in the cache
  CHECK(t.measured_valid == 4201);
  CHECK(t.best_time_ms == s.best_time_ms);
  // Every T1-valid configuration is in the cache, and every T1-invalid one is not.
  uint64_t mismatches = 0;
  for (uint64_t i = 0; i < by_spec.space().size(); ++i) {
    Config c = by_spec.space().get(i);
    mismatches += by_spec.space().is_valid(c) != (by_spec.find(c) != nullptr);
  }
  CHECK(mismatches == 0);
  std::printf("convolution_milo/A4000: optimum %.4f ms at %s\n", t.best_time_ms,
              t.best->to_string().c_str());

  ReplayMeasurer measurer(by_spec);
  uint64_t failed = 0;
  for (uint64_t i = 0; i < by_spec.space().size(); ++i) {
    Config c = by_spec.space().get(i);
    if (!by_spec.space().is_valid(c)) continue;
    auto m = measurer.measure(c);
    failed += !m.valid;
    if (!m.valid) CHECK((m.error == "RuntimeFailedConfig" || m.error == "CompilationFailedConfig"));
  }
  CHECK(failed == 4362 - 4201);
}

TEST_CASE("gemm_milo T1 spec loads") {
  const std::string spec_path = kData + "/spaces/gemm_milo.json";
  if (!have(spec_path)) return;
  T1Spec spec = load_t1_spec(spec_path);
  CHECK(spec.parameters.size() == 17);
  CHECK(spec.conditions.size() == 8);
  cutune::ConfigSpace space;
  define_t1_space(spec, space);
  CHECK(space.knobs().size() == 17);
  auto valid = space.count_valid();
  REQUIRE(valid.has_value());
  CHECK(*valid > 0);
  CHECK(*valid < space.size());
  std::printf("gemm_milo: %llu of %llu configurations valid\n",
              static_cast<unsigned long long>(*valid),
              static_cast<unsigned long long>(space.size()));
}

TEST_CASE("a spec that does not match the cache is a ConfigError") {
  KtCache cache = parse_kt_cache(kTinyCache);
  T1Spec spec = parse_t1_spec(nlohmann::json::parse(R"({"ConfigurationSpace": {
      "TuningParameters": [{"Name": "bx", "Type": "int", "Values": "[16, 32]"}],
      "Conditions": []}})"));
  CHECK_THROWS_AS(ReplayTask::from_spec(cache, spec), cutune::ConfigError);
  CHECK_THROWS_AS(parse_t1_spec(nlohmann::json::parse(R"({"ConfigurationSpace": {
      "TuningParameters": [{"Name": "bx", "Type": "float", "Values": "[1]"}]}})")),
                  cutune::ConfigError);
  CHECK_THROWS_AS(parse_t1_spec(nlohmann::json::parse(R"({"ConfigurationSpace": {
      "TuningParameters": [{"Name": "bx", "Type": "int", "Values": "[1]"}],
      "Conditions": [{"Expression": "by > 1"}]}})")),
                  ExprError);
}

TEST_CASE("JSON that does not parse is one line with its line and column") {
  const auto message = [](const std::string& text) {
    try {
      parse_json_text(text, "spec 'x.json'");
    } catch (const cutune::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message("{\"a\": [1, 2]}") == "no error");
  // The third line's 11th character, the '}' after a comma.
  const std::string bad = message("{\n  \"a\": 1,\n  \"b\": [1,}\n}");
  CHECK_THAT(bad, Catch::StartsWith("spec 'x.json' is not valid JSON: line 3, column 11: syntax "
                                    "error while parsing value"));
  CHECK(bad.find('\n') == std::string::npos);
  CHECK(bad.find("last read") == std::string::npos);  // the text read spans lines
  // Where the parser stopped: the '}' that ends the literal "tru".
  CHECK_THAT(message("{\"a\": tru}"), Catch::Contains("line 1, column 10"));
  CHECK_THAT(message(""), Catch::Contains("line 1, column 1"));
  CHECK_THAT(message("{\n"), Catch::Contains("line 2, column 1"));
}
