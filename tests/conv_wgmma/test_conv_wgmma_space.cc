// The warpgroup-MMA convolutions' registration, space and IR features: the templates sit
// beside the mma.sync ones under conv2d_fp16 / conv2d_bf16, the copy-width and tile rules
// follow the shape, every ResNet-18 layer builds them and their reference configurations
// lower, and the reference configurations' features count their warpgroup MMAs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "cost_model/features.h"
#include "kernels/conv2d_wgmma.h"
#include "kernels/layer_suites.h"
#include "kernels/wgmma_blocks.h"
#include "tests/conv_wgmma/conv_wgmma_samples.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

double unscaled(const cost_model::FeatureExtractor& f, const Config& c, const std::string& name) {
  std::vector<float> v(size_t(f.size()));
  f.extract(c, v);
  std::vector<std::string> names = f.names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return std::exp2(double(v[i])) - 1;
  }
  FAIL("no feature " << name);
  return 0;
}

}  // namespace

TEST_CASE("the wgmma convolutions are registered beside the mma.sync ones", "[wgmma][conv]") {
  for (const char* op : {"conv2d_fp16", "conv2d_bf16"}) {
    CHECK(default_template(op) == std::string(op) + "_nhwc");  // mma.sync off Hopper
    CHECK(default_template(op, "sm_90") == std::string(op) + "_wgmma_nhwc");
    for (const std::string& name : template_names("conv2d", "wgmma", std::string(op).substr(7))) {
      auto tmpl = make_template(op, test::kWg3x3, name);
      CHECK(tmpl->name() == name);
      CHECK(tmpl->op() == op);
    }
  }
  CHECK_THROWS_AS(make_template("conv2d_fp16", {1, 2, 3}, "conv2d_fp16_wgmma_nhwc"), TaskError);
  CHECK_THROWS_AS(make_template("conv2d_fp16", {1, 2, 3, 3, 4, 5, 5}, "conv2d_fp16_wgmma_nhwc"),
                  TaskError);  // 5x5 filter on a 3x3 image: no output
}

TEST_CASE("copies are no wider than both C and K allow", "[wgmma][conv]") {
  auto widest = [](const std::vector<int64_t>& shape) {
    auto tmpl = make_template("conv2d_fp16", shape, "conv2d_fp16_wgmma_nhwc");
    std::mt19937_64 rng(7);
    int64_t most = 0;
    for (int i = 0; i < 300; ++i) {
      std::optional<Config> c = tmpl->space().sample_valid(rng);
      REQUIRE(c.has_value());
      most = std::max(most, c->get("copy_bytes"));
    }
    return most;
  };
  CHECK(widest(test::kWg1x1) == 16);     // C = 24, K = 40
  CHECK(widest(test::kWg3x3) == 8);      // C = 12, K = 20
  CHECK(widest(test::kWgDilated) == 8);  // C = 32, K = 36
  CHECK(widest(test::kWg7x7) == 2);      // C = 3
  CHECK(widest(test::kWgOddK) == 2);     // K = 33
}

TEST_CASE("block tiles stay below twice the GEMM's extent", "[wgmma][conv]") {
  // 9 output pixels, 72 channels, R·S·C = 288: only 64-row tiles, at most 128 columns.
  auto tmpl = make_template("conv2d_bf16", test::kWgFewPixels, "conv2d_bf16_wgmma_nhwc");
  std::vector<Config> configs = test::sample_configs(*tmpl, 200, 11);
  REQUIRE(configs.size() == 200);
  for (const Config& c : configs) {
    CHECK(c.get("block_m") == 64);
    CHECK(c.get("block_n") <= 128);
  }
}

TEST_CASE(
    "every ResNet-18 layer builds the wgmma convolutions and their reference "
    "configurations lower for sm_90a",
    "[wgmma][conv][suite]") {
  for (int64_t batch : {1, 16}) {
    for (const SuiteLayer& l : suite_layers("resnet18", batch)) {
      for (const char* name : {"conv2d_fp16_wgmma_nhwc", "conv2d_bf16_wgmma_nhwc_out16"}) {
        const std::string op = std::string(name).substr(0, 11);
        INFO(l.name << " batch " << batch << " " << name);
        std::unique_ptr<Template> tmpl;
        REQUIRE_NOTHROW(tmpl = make_template(op, l.shape, name));
        std::vector<Config> refs = tmpl->reference_configs();
        REQUIRE(refs.size() >= 2);
        for (const Config& c : refs) {
          Lowered lowered = lower(*tmpl, c, ir::TargetLimits{});
          for (const std::string& e : lowered.verify.errors) UNSCOPED_INFO(e);
          CHECK(lowered.ok());
          if (lowered.ok()) CHECK(lowered.source->arch_specific);
        }
        // The hand-tuned configuration is the first for every layer but C1 (C = 3).
        if (l.name != "C1") CHECK(refs.front().get("copy_bytes") == 16);
      }
    }
  }
}

TEST_CASE("the reference configurations' features count their warpgroup MMAs",
          "[wgmma][conv][features]") {
  // ResNet-18 C6 at batch 1: M = 784, N = 128, K = 1152.
  const std::vector<int64_t> c6 = {1, 128, 28, 28, 128, 3, 3, 1, 1, 1};
  auto tmpl = make_template("conv2d_fp16", c6, "conv2d_fp16_wgmma_nhwc");
  auto f = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  std::vector<Config> refs = tmpl->reference_configs();
  REQUIRE(refs.size() >= 3);
  // One of them splits K unevenly: 4 splits of 18 slices.
  CHECK(std::any_of(refs.begin(), refs.end(), [](const Config& c) {
    return wg::split_k_of(c) == 4 && c.get("block_k") == 64;
  }));
  for (const Config& c : refs) {
    INFO(test::describe(*tmpl, c));
    std::vector<float> v(size_t(f->size()));
    f->extract(c, v);
    CHECK(std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); }));
    // An m64nNk16 counts as N/8 m16n8k16 per warp: per block and 16 of K, (bm/16)·(bn/8).
    // With split-K the splits share the slices (18 of 64 in 4 splits: 5, 5, 5, 3), which are
    // counted as they are, not as 4 splits of the largest share.
    const int64_t bm = c.get("block_m"), bn = c.get("block_n"), bk = c.get("block_k");
    const int64_t slices = ceil_div64(1152, bk);
    const double mma = double(ceil_div64(784, bm) * ceil_div64(128, bn)) *
                       double(slices * (bk / 16)) * double(bm / 16 * (bn / 8));
    CHECK(unscaled(*f, c, "kernel.mma_ops") == Approx(mma).epsilon(1e-3));
    CHECK(unscaled(*f, c, "kernel.float_ops") >= 0.999 * tmpl->flops());
    // Without a producer, wgmmas in flight across slices make the refill lag one slot more.
    CHECK(unscaled(*f, c, "kernel.pipeline_depth") ==
          Approx(c.get("stages") - c.get("mma_pipe")).epsilon(1e-3));
  }
}
