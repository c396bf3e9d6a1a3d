// cutune doctor: every library with where it was found or why not; informative, so exit 0.

#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_run.h"

using cutune::test::CliRun;
using cutune::test::run_cutune;
using nlohmann::json;

TEST_CASE("cli: doctor --json lists devices, the driver and every library", "[cli][doctor]") {
  CliRun r = run_cutune("doctor --json");
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  const json j = json::parse(r.out);
  REQUIRE(j["devices"].is_array());
  REQUIRE(j["driver"].is_object());
  CHECK(j["driver"]["usable"].is_boolean());
  if (!j["driver"]["usable"].get<bool>()) {
    CHECK(j["devices"].empty());
    CHECK_FALSE(j["driver"]["reason"].get<std::string>().empty());
  }
  REQUIRE(j["libraries"].is_array());
  std::set<std::string> keys;
  for (const json& l : j["libraries"]) {
    INFO(l.dump());
    keys.insert(l["key"].get<std::string>());
    CHECK_FALSE(l["name"].get<std::string>().empty());
    if (l["found"].get<bool>()) {
      CHECK(std::filesystem::exists(l["path"].get<std::string>()));
      CHECK(l.contains("version"));
    } else {
      CHECK_THAT(l["error"].get<std::string>(), Catch::StartsWith("not found"));
      CHECK_FALSE(l["tried"].empty());
      CHECK(std::find(j["missing"].begin(), j["missing"].end(), l["name"]) != j["missing"].end());
    }
  }
  CHECK(keys ==
        std::set<std::string>{"driver", "nvrtc", "cupti", "cublas", "cublaslt", "cudnn", "nvml"});
  CHECK(j["search_folders"].is_array());
}

TEST_CASE("cli: doctor in text names every library and says what is missing", "[cli][doctor]") {
  CliRun r = run_cutune("doctor");
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  for (const char* name : {"CUDA driver", "NVRTC", "CUPTI", "cuBLAS", "cuBLASLt", "cuDNN", "NVML"})
    CHECK_THAT(r.out, Catch::Contains(std::string("  ") + name));
  const json j = json::parse(run_cutune("doctor --json").out);
  if (j["missing"].empty())
    CHECK_THAT(r.out, Catch::Contains("everything cutune can use is here"));
  else
    CHECK_THAT(r.out, Catch::Contains("MISSING") && Catch::Contains("missing:"));
}
