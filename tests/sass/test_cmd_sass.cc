// `cutune sass` and `compile --json --sass` end to end. The missing-disassembler case runs
// everywhere; the others need nvdisasm and exit 77 (skipped) without it.

#include <cstdlib>
#include <iostream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "src/sass/disassembler.h"
#include "tests/cli/cli_run.h"

using cutune::test::CliRun;
using cutune::test::run_cutune;
using nlohmann::json;

namespace {

void require_nvdisasm() {
  const cutune::sass::DisassemblerLookup& tool = cutune::sass::find_nvdisasm();
  if (tool.found()) return;
  std::cout << "skipped: " << tool.error() << std::endl;
  std::exit(77);
}

}  // namespace

TEST_CASE("sass without nvdisasm: one line saying where it looked, exit 2", "[sass][cli]") {
  CliRun missing;
  {
    setenv("CUTUNE_NVDISASM", "/nonexistent/bin/nvdisasm", 1);
    missing = run_cutune("sass gemm --shape 64,64,64 --arch sm_90");
    CliRun compile = run_cutune("compile gemm --shape 64,64,64 --sample 2 --json --sass");
    unsetenv("CUTUNE_NVDISASM");
    INFO_RUN(compile);
    CHECK(compile.status == 2);
  }
  INFO_RUN(missing);
  CHECK(missing.status == 2);
  CHECK(missing.err_lines() == 1);
  CHECK(missing.err.find("nvdisasm not found") != std::string::npos);
  CHECK(missing.err.find("/nonexistent/bin") != std::string::npos);
  CHECK(missing.out.empty());
}

TEST_CASE("sass --json: the reference configuration's registers and main-loop mix", "[sass][cli]") {
  require_nvdisasm();
  CliRun r = run_cutune("sass gemm --shape 256,256,256 --arch sm_90 --json");
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  CHECK(j["template"] == "gemm_nn");
  CHECK(j["config"]["knobs"]["block_k"] == 8);  // the first reference configuration
  CHECK(j["registers"].get<int>() > 32);
  CHECK(j["spill_store_bytes"] == 0);
  CHECK(j["main_loop"]["kinds"]["FFMA"].get<int>() >= 256);
  CHECK(j["math_share"].get<double>() > 0.8);

  CliRun text = run_cutune("sass gemm --shape 256,256,256 --arch sm_90");
  INFO_RUN(text);
  CHECK(text.status == 0);
  CHECK(text.out.find("math_share") != std::string::npos);
  CHECK(text.out.find("LDS.128") != std::string::npos);
}

TEST_CASE("compile --json --sass: a report per compiled configuration, and --sass needs --json",
          "[sass][cli]") {
  require_nvdisasm();
  CliRun r = run_cutune("compile gemm --shape 100,100,100 --sample 3 --json --sass");
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  REQUIRE(j["sass"].size() == j["compiled"].get<size_t>());
  for (const json& s : j["sass"]) {
    CHECK(s.contains("config"));
    CHECK(s["registers"].get<int>() > 0);
  }
  CliRun text = run_cutune("compile gemm --shape 100,100,100 --sample 3 --sass");
  CHECK(text.status == 2);
  CHECK(text.err.find("--sass needs --json") != std::string::npos);
}
