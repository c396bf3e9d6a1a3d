// 130 to 220 sampled configurations of each convolution template (over a ResNet-18 layer or two and
// an odd shape) compile with NVRTC for sm_90. A configuration the verifier rejects is a
// predicted failure and is not compiled; every one it accepts must compile.

#include <catch2/catch.hpp>

#include "src/lower/lower.h"
#include "src/runtime/nvrtc_builder.h"
#include "tests/conv/conv_test_util.h"

using namespace cutune;

namespace {

NvrtcBuilder& builder() {
  static NvrtcBuilder b(BuildOptions{}, 2);
  return b;
}

// Returns how many of `count` sampled configurations the verifier accepted.
int compile_sampled(const std::string& op, const std::string& name,
                    const std::vector<int64_t>& shape, int count, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  std::vector<Config> configs = test::sample_configs(*tmpl, count, seed);
  std::vector<CudaSource> sources;
  std::vector<std::string> labels;
  for (const Config& c : configs) {
    Lowered l = lower(*tmpl, c, ir::TargetLimits{});
    // A sampled configuration satisfies the space's constraints, so the template must build
    // it: only the verifier (resource limits) may turn it down.
    INFO(tmpl->name() << " " << c.to_string() << ": " << l.build_error);
    CHECK(l.build_error.empty());
    if (!l.ok()) continue;
    sources.push_back(*l.source);
    labels.push_back(c.to_string());
  }
  std::vector<CompileResult> results = builder().compile_batch(sources);
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(tmpl->name() << " " << labels[i] << "\n" << results[i].log);
    CHECK(results[i].ok());
  }
  return int(sources.size());
}

// ResNet-18 C6 and C1 (batch 1), and an odd shape with every parameter awkward.
const std::vector<int64_t> kC6 = {1, 128, 28, 28, 128, 3, 3, 1, 1};
const std::vector<int64_t> kC1 = {1, 3, 224, 224, 64, 7, 7, 2, 3};
const std::vector<int64_t> kOdd = {3, 13, 23, 17, 11, 5, 3, 2, 2, 2};

}  // namespace

// The direct NCHW kernels unroll their filter loops fully and compile slowest (about 0.7 s
// each), so they are sampled less.
TEST_CASE("conv2d_nchw: 50 configurations of ResNet-18 C6 compile", "[conv][nvrtc]") {
  CHECK(compile_sampled("conv2d", "conv2d_nchw", kC6, 50, 101) >= 38);
}
TEST_CASE("conv2d_nchw: 40 configurations of ResNet-18 C1 compile", "[conv][nvrtc]") {
  CHECK(compile_sampled("conv2d", "conv2d_nchw", kC1, 40, 102) >= 30);
}
TEST_CASE("conv2d_nchw: 40 configurations of an odd shape compile", "[conv][nvrtc]") {
  CHECK(compile_sampled("conv2d", "conv2d_nchw", kOdd, 40, 103) >= 30);
}

TEST_CASE("conv2d_nhwc: 80 configurations of ResNet-18 C6 compile", "[conv][nvrtc]") {
  CHECK(compile_sampled("conv2d", "conv2d_nhwc", kC6, 80, 201) >= 60);
}
TEST_CASE("conv2d_nhwc: 60 configurations of ResNet-18 C1 compile", "[conv][nvrtc]") {
  CHECK(compile_sampled("conv2d", "conv2d_nhwc", kC1, 60, 202) >= 45);
}
TEST_CASE("conv2d_nhwc: 60 configurations of an odd shape compile", "[conv][nvrtc]") {
  CHECK(compile_sampled("conv2d", "conv2d_nhwc", kOdd, 60, 203) >= 45);
}

TEST_CASE("depthwise: 80 configurations of MobileNet D3 compile", "[conv][nvrtc]") {
  CHECK(compile_sampled("depthwise_conv2d", "", {1, 128, 56, 56, 3, 3, 1, 1}, 80, 301) >= 60);
}
TEST_CASE("depthwise: 60 configurations of MobileNet D2 (stride 2) compile", "[conv][nvrtc]") {
  CHECK(compile_sampled("depthwise_conv2d", "", {1, 64, 112, 112, 3, 3, 2, 1}, 60, 302) >= 45);
}
TEST_CASE("depthwise: 60 configurations of an odd shape compile", "[conv][nvrtc]") {
  CHECK(compile_sampled("depthwise_conv2d", "", {3, 13, 23, 17, 5, 3, 2, 2, 2}, 60, 303) >= 45);
}
