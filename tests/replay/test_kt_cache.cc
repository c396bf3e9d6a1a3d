#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <zlib.h>

#include "tests/dataset_skip.h"
#include "src/replay/kt_cache.h"

using namespace cutune::replay;
using Catch::Matchers::Contains;

namespace {

const std::string kData = CUTUNE_SOURCE_DIR "/../shared/datasets";

// A two-parameter cache: three entries, one of which failed.
const char* kTinyCache = R"({
  "device_name": "Tiny GPU", "kernel_name": "k", "problem_size": [64, 32],
  "tune_params_keys": ["bx", "by"],
  "tune_params": {"bx": [16, 32], "by": [1, 2]},
  "objective": "time",
  "cache": {
    "16,1": {"bx": 16, "by": 1, "time": 2.0, "times": [1.5, 2.5], "GFLOP/s": 10.5,
             "timestamp": "2023-01-01 00:00:00", "extra": {"nested": [1, {"a": null}]}},
    "32,1": {"bx": 32, "by": 1, "time": 1.0, "times": [0.9, 1.1], "GB/s": 3e2},
    "16,2": {"bx": 16, "by": 2, "time": "RuntimeFailedConfig", "compile_time": 1}
  }
})";

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / "cutune_test_kt_cache";
  std::filesystem::create_directories(dir);
  return dir;
}

void write_gzip(const std::filesystem::path& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) ==
          static_cast<int>(text.size()));
  gzclose(f);
}

void check_tiny(const KtCache& c) {
  CHECK(c.device_name == "Tiny GPU");
  CHECK(c.kernel_name == "k");
  CHECK(c.problem_size == std::vector<int64_t>{64, 32});
  CHECK(c.tune_params_keys == std::vector<std::string>{"bx", "by"});
  CHECK(c.tune_params == std::vector<std::vector<int64_t>>{{16, 32}, {1, 2}});
  REQUIRE(c.entries.size() == 3);
  CHECK(c.valid_count() == 2);
  CHECK(c.entries[0].values == std::vector<int64_t>{16, 1});
  CHECK(c.entries[0].time_ms == 2.0);
  CHECK(c.entries[0].times_ms == std::vector<double>{1.5, 2.5});
  CHECK(c.entries[0].gflops == 10.5);
  CHECK_FALSE(c.entries[0].gbs.has_value());
  CHECK(c.entries[1].gbs == 300.0);
  CHECK_FALSE(c.entries[2].valid);
  CHECK(c.entries[2].error == "RuntimeFailedConfig");
  CHECK(c.entries[2].times_ms.empty());
}

}  // namespace

TEST_CASE("plain and gzip caches load alike") {
  auto dir = temp_dir();
  { std::ofstream(dir / "tiny.json") << kTinyCache; }
  write_gzip(dir / "tiny.json.gz", kTinyCache);
  check_tiny(load_kt_cache((dir / "tiny.json").string()));
  check_tiny(load_kt_cache((dir / "tiny.json.gz").string()));
  CHECK(parse_kt_cache(kTinyCache).objective == "time");
}

TEST_CASE("Kernel Tuner's NaN, string escapes and the byte of a syntax error") {
  // Kernel Tuner writes NaN for metrics it could not compute; plain JSON has no NaN.
  const char* text = R"({
    "device_name": "Caf\u00e9 \"GPU\"", "kernel_name": "k\tk", "problem_size": [8],
    "tune_params_keys": ["bx"], "tune_params": {"bx": [16, 32]},
    "cache": {
      "16": {"bx": 16, "time": 1.25, "times": [1.25, 1.25], "GFLOP/s": NaN},
      "32": {"bx": 32, "time": 0.5, "GB/s": -Infinity, "note": "x\/y\\z"}
    }
  })";
  KtCache c = parse_kt_cache(text, "t");
  CHECK(c.device_name == "Caf\xc3\xa9 \"GPU\"");
  CHECK(c.kernel_name == "k\tk");
  REQUIRE(c.entries.size() == 2);
  CHECK(c.entries[0].time_ms == 1.25);
  REQUIRE(c.entries[0].gflops.has_value());
  CHECK(std::isnan(*c.entries[0].gflops));
  CHECK(c.entries[1].time_ms == 0.5);
  try {
    parse_kt_cache(R"({"tune_params_keys": ["bx"], "tune_params": {"bx": [1]}, "cache": x})", "t");
    FAIL("no error");
  } catch (const cutune::ConfigError& e) {
    CHECK_THAT(e.what(), Contains("t: not valid JSON (byte 66: Invalid value.)"));  // at the x
  }
}

TEST_CASE("malformed caches are one-line ConfigErrors") {
  auto message = [](const std::string& text) -> std::string {
    try {
      parse_kt_cache(text, "t");
    } catch (const cutune::ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK_THAT(message("{"), Contains("not valid JSON"));
  CHECK_THAT(message("[1, 2"), Contains("not valid JSON"));
  CHECK_THAT(message(R"({"cache": {}})"), Contains("tune_params_keys"));
  CHECK_THAT(message(R"({"tune_params_keys": ["a"], "tune_params": {}, "cache": {}})"),
             Contains("tune_params lacks 'a'"));
  CHECK_THAT(message(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1]},
                         "cache": {"1": {"time": 1.0}}})"),
             Contains("lacks an integer 'a'"));
  CHECK_THAT(message(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1]},
                         "cache": {"1": {"a": 1}}})"),
             Contains("has no time"));
  CHECK_THAT(message(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1.5]}, "cache": {}})"),
             Contains("not an integer"));
  CHECK_THROWS_AS(load_kt_cache("/nonexistent/cache.json"), cutune::ConfigError);
  auto dir = temp_dir();
  { std::ofstream(dir / "bad.json.gz", std::ios::binary) << "\x1f\x8b garbage"; }
  CHECK_THROWS_AS(load_kt_cache((dir / "bad.json.gz").string()), cutune::ConfigError);
}

namespace {

void check_dataset(const char* file, size_t entries, size_t valid) {
  const std::string path = kData + "/" + file;
  cutune::test::require_dataset_path(path);
  auto t0 = std::chrono::steady_clock::now();
  KtCache cache = load_kt_cache(path);
  auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("load %s: %zu entries in %.1f ms\n", file, cache.entries.size(), ms);
  CHECK(cache.entries.size() == entries);
  CHECK(cache.valid_count() == valid);
  size_t malformed = 0;
  for (const auto& e : cache.entries)
    malformed += e.values.size() != cache.tune_params_keys.size() ||
                 (e.valid && e.times_ms.size() != 32) || (!e.valid && e.error.empty());
  CHECK(malformed == 0);
}

}  // namespace

TEST_CASE("dataset cache gemm/RTX_3090") { check_dataset("gemm/RTX_3090.json.gz", 17956, 17956); }
TEST_CASE("dataset cache gemm/RTX_2080_Ti") {
  check_dataset("gemm/RTX_2080_Ti.json.gz", 17956, 17956);
}
TEST_CASE("dataset cache convolution_milo/A4000") {
  check_dataset("convolution_milo/A4000.json.gz", 4362, 4201);
}
TEST_CASE("dataset cache convolution_milo/W6600") {
  check_dataset("convolution_milo/W6600.json.gz", 4362, 4362);
}
TEST_CASE("dataset cache dedispersion_milo/A4000") {
  check_dataset("dedispersion_milo/A4000.json.gz", 11130, 11130);
}
