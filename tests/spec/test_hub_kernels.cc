// Kernels from the wild, unchanged: the CUDA kernels and T1 specs of Kernel Tuner's benchmark
// hub (AutoTuningAssociation/benchmark_hub, MIT), read at run time from the folder that the
// environment variable CUTUNE_KT_HUB names (a checkout of the hub); each case skips visibly
// without it. Nothing of the hub is in this repository.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_run.h"
#include "tests/dataset_skip.h"

using cutune::test::CliRun;
using cutune::test::run_cutune;
using Catch::Matchers::Contains;

namespace {

// The hub's folder, or the case is skipped (exit 77) with the reason.
std::string hub() {
  const char* dir = std::getenv("CUTUNE_KT_HUB");
  if (dir == nullptr || !std::filesystem::exists(std::string(dir) + "/kernels")) {
    std::cout << "skipped: set CUTUNE_KT_HUB to a checkout of "
                 "github.com/AutoTuningAssociation/benchmark_hub"
              << std::endl;
    std::exit(77);
  }
  return dir;
}

nlohmann::json json_of(const CliRun& r) {
  INFO_RUN(r);
  REQUIRE_NOTHROW(nlohmann::json::parse(r.out));
  return nlohmann::json::parse(r.out);
}

void check_one_line_refusal(const CliRun& r, const std::string& needle) {
  INFO_RUN(r);
  CHECK(r.status == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Contains(needle));
}

}  // namespace

TEST_CASE("hub convolution_milo: compiles with registers and verifies at its problem size") {
  const std::string spec = hub() + "/kernels/convolution_milo.json";
  const nlohmann::json space = json_of(run_cutune("space --spec " + spec + " --json"));
  CHECK(space["valid"] == 4362);
  const CliRun compiled = run_cutune("compile --spec " + spec + " --sample 12 --jobs 2 --json");
  const nlohmann::json c = json_of(compiled);
  CHECK(c["compiled"].get<int>() >= 8);  // the rest: more static shared memory than 48 KiB
  CHECK(c["registers"]["min"].get<double>() > 0);
  // Its own 4096 x 4096 (the kernel fixes image_width/height to 4096 in the source).
  const CliRun verified = run_cutune("verify --spec " + spec + " --sample 3");
  INFO_RUN(verified);
  CHECK(verified.status == 0);
  CHECK_THAT(verified.out, Contains("3 of 3 passed"));
}

TEST_CASE("hub convolution_milo at 256x256: the fixed 4096 image is read out of bounds, exit 1") {
  const CliRun r =
      run_cutune("verify --spec " + hub() + "/kernels/convolution_milo.json --problem-size 256,256 --sample 1");
  INFO_RUN(r);
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Contains("out_of_bounds"));
}

TEST_CASE("hub convolution (the older one): compiles and verifies") {
  const std::string spec = hub() + "/currently_unused/kernels/convolution.json";
  const nlohmann::json c = json_of(run_cutune("compile --spec " + spec + " --sample 8 --jobs 2 --json"));
  CHECK(c["compiled"].get<int>() >= 1);
  CHECK(c["registers"]["min"].get<double>() > 0);
  const CliRun verified = run_cutune("verify --spec " + spec + " --sample 2");
  INFO_RUN(verified);
  CHECK(verified.status == 0);
}

TEST_CASE("hub hotspot and dedispersion: defaults that violate the conditions are refused in one line") {
  // Neither spec has a reference its own conditions accept (hotspot's Default of max_tfactor is
  // not even among its values: a warning first).
  const CliRun h = run_cutune("verify --spec " + hub() + "/kernels/hotspot_milo.json --sample 1");
  INFO_RUN(h);
  CHECK(h.status == 2);
  CHECK_THAT(h.err, Contains("warning: parameter 'max_tfactor' has Default 1") &&
                        Contains("violates the condition temporal_tiling_factor % "
                                 "loop_unroll_factor_t == 0"));
  check_one_line_refusal(
      run_cutune("verify --spec " + hub() + "/kernels/dedispersion_milo.json --sample 1"),
      "violates the condition tile_size_x > 1 or tile_stride_x == 0");
}

TEST_CASE("hub pnpoly: a spec without arguments is refused in one line") {
  check_one_line_refusal(
      run_cutune("verify --spec " + hub() + "/currently_unused/kernels/pnpoly.json"),
      "Arguments is empty");
}

TEST_CASE("hub gemm_milo (OpenCL): its space reads, compiling is refused in one line") {
  const std::string spec = hub() + "/kernels/gemm_milo.json";
  const CliRun space = run_cutune("space --spec " + spec);
  INFO_RUN(space);
  CHECK(space.status == 0);
  check_one_line_refusal(run_cutune("compile --spec " + spec), "only \"CUDA\"");
}

TEST_CASE("hub convolution_milo: tune --spec --replay over the hub's measured cache") {
  const std::string cache = CUTUNE_SOURCE_DIR "/../shared/datasets/convolution_milo/A4000.json.gz";
  cutune::test::require_dataset_path(cache);
  const cutune::test::ProcessTempDir dir("cutune-hub");
  const CliRun r = run_cutune("tune --spec " + hub() + "/kernels/convolution_milo.json --replay " +
                              cache + " --trials 40 --json --log " + (dir.path() / "hub.jsonl").string());
  const nlohmann::json j = json_of(r);
  CHECK(j["measured"].get<int>() == 40);
}
