// The --spec forms of tune, bench and export as a user runs them: without a GPU they say so in
// one line and leave no log; over a Kernel Tuner cache of the same kernel, tune --spec
// --replay searches, resumes and transfers; bad input is one line and exit code 2.

#include <catch2/catch.hpp>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "src/runtime/driver_api.h"
#include "tests/cli/cli_run.h"
#include "tests/dataset_skip.h"

using cutune::driver_api;
using cutune::test::run_cutune;

namespace {

const std::string kSource = CUTUNE_SOURCE_DIR;
const std::string kDatasets = kSource + "/../shared/datasets";

std::filesystem::path scratch(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() / ("cutune_spec_cli_" + name);
  std::filesystem::remove_all(p);
  return p;
}

}  // namespace

TEST_CASE("tune --spec and bench --spec measure on a GPU, or say in one line that there is none") {
  const auto log = scratch("gpu.jsonl");
  const auto r = run_cutune("tune --spec " + kSource +
                            "/examples/reduction/reduce.json --trials 4 --batch 4 --quiet --log " +
                            log.string());
  INFO_RUN(r);
  // Whether there is a GPU is the driver's answer in this process, not the exit status under test.
  if (driver_api() != nullptr) {  // the records are there
    CHECK(r.status == 0);
    CHECK((std::filesystem::exists(log) && std::filesystem::file_size(log) > 0));
  } else {
    CHECK(r.status == 1);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Catch::Contains("no CUDA device") && Catch::Contains("verify --spec"));
    CHECK_FALSE(std::filesystem::exists(log));
    const auto b = run_cutune("bench --spec " + kSource + "/examples/reduction/reduce.json");
    INFO_RUN(b);
    CHECK(b.status == 1);
    CHECK(b.err_lines() == 1);
  }
  std::filesystem::remove_all(log);
}

TEST_CASE("tune --spec over a cache of the same kernel searches, resumes and transfers") {
  const std::string spec = kDatasets + "/spaces/convolution_old.json";
  const std::string cache = kDatasets + "/convolution_old/RTX_3090.json.gz";
  const std::string other = kDatasets + "/convolution_old/RTX_2080_Ti.json.gz";
  for (const std::string& p : {spec, cache, other}) cutune::test::require_dataset_path(p);
  const auto log = scratch("replay.jsonl");
  const std::string base = "tune --spec " + spec + " --replay " + cache +
                           " --batch 16 --quiet --json --log " + log.string();
  const auto a = run_cutune(base + " --trials 32");
  INFO_RUN(a);
  REQUIRE(a.status == 0);
  CHECK(nlohmann::json::parse(a.out)["measured"] == 32);
  const auto b = run_cutune(base + " --trials 48 --resume --transfer-from " + other);
  INFO_RUN(b);
  REQUIRE(b.status == 0);
  const auto j = nlohmann::json::parse(b.out);
  CHECK(j["resumed"] == 32);
  CHECK(j["measured"] == 16);
  CHECK_THAT(b.err, Catch::Contains("transfer: global model on 6768 records of 1 other task"));
  // The records are of the spec's kernel; export needs its source, which the dataset lacks.
  const auto e = run_cutune("export " + log.string() + " --spec " + spec + " --out " +
                            scratch("export").string());
  INFO_RUN(e);
  CHECK(e.status == 2);
  CHECK(e.err_lines() == 1);
  CHECK_THAT(e.err, Catch::Contains("KernelFile"));
  std::filesystem::remove_all(log);
}

TEST_CASE("bad --spec command lines are one line and exit code 2") {
  const std::string spec = kSource + "/examples/reduction/reduce.json";
  for (const std::string& args : std::vector<std::string>{
           "tune --spec " + spec + " gemm --shape 4,4,4", "tune --spec /nonexistent/spec.json",
           "bench --spec /nonexistent/spec.json", "bench --spec " + spec + " --seconds 0",
           "bench --spec " + spec + " --config 999999999",
           "export /nonexistent.jsonl --spec " + spec + " --out /tmp/x"}) {
    const auto r = run_cutune(args);
    INFO_RUN(r);
    CHECK(r.status == 2);
    CHECK(r.err_lines() == 1);
  }
}
