// tune-suite on the 16-bit convolution templates: suite_layer_op maps a layer and a dtype to
// the operator, and `cutune tune-suite --dtype fp16 --template conv2d_fp16_wgmma_nhwc` builds
// every layer's template before it looks for a GPU (bad input: one line, exit 2).
#include <catch2/catch.hpp>

#include <filesystem>

#include "kernels/layer_suites.h"
#include "kernels/template.h"
#include "src/runtime/driver_api.h"
#include "tests/cli/cli_run.h"

using namespace cutune;

TEST_CASE("suite layers map to the 16-bit convolution operators", "[wgmma][conv][suite]") {
  const std::vector<SuiteLayer> resnet = suite_layers("resnet18");
  CHECK(suite_layer_op(resnet[1], "fp32") == "conv2d");
  CHECK(suite_layer_op(resnet[1], "fp16") == "conv2d_fp16");
  CHECK(suite_layer_op(resnet[1], "bf16") == "conv2d_bf16");
  CHECK_THROWS_AS(suite_layer_op(resnet[1], "fp8"), TaskError);
  const std::vector<SuiteLayer> mobilenet = suite_layers("mobilenet");
  CHECK(suite_layer_op(mobilenet[0], "fp32") == "depthwise_conv2d");
  CHECK_THROWS_AS(suite_layer_op(mobilenet[0], "fp16"), TaskError);
}

TEST_CASE("tune-suite takes --dtype and --template, and checks them before the GPU",
          "[wgmma][conv][suite][cli]") {
  const std::string log =
      (std::filesystem::temp_directory_path() / "cutune_conv_wgmma_suite.log").string();
  std::filesystem::remove(log);
  test::CliRun r = test::run_cutune(
      "tune-suite resnet18 --dtype fp16 --template "
      "conv2d_bf16_wgmma_nhwc --log " +
      log);
  CHECK(r.status == 2);
  CHECK(r.err.find("unknown template 'conv2d_bf16_wgmma_nhwc' for conv2d_fp16") !=
        std::string::npos);
  CHECK(r.err_lines() == 1);
  r = test::run_cutune("tune-suite resnet18 --dtype fp64 --log " + log);
  CHECK(r.status == 2);
  CHECK(r.err.find("unknown dtype 'fp64'") != std::string::npos);
  r = test::run_cutune("tune-suite mobilenet --dtype bf16 --log " + log);
  CHECK(r.status == 2);
  CHECK(r.err.find("conv2d and gemm layers do") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(log));
  if (driver_api() != nullptr) {
    SUCCEED("a driver is present; the no-device path is not reachable here");
    return;
  }
  r = test::run_cutune(
      "tune-suite resnet18 --dtype fp16 --template conv2d_fp16_wgmma_nhwc "
      "--layers C2,C12 --trials 3 --log " +
      log);
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.rfind("cutune: no CUDA device found", 0) == 0);
  CHECK_FALSE(std::filesystem::exists(log));
}
