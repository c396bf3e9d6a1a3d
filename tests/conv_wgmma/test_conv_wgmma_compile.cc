// 200 sampled configurations of each warpgroup-MMA convolution template lower, verify and
// compile with NVRTC for sm_90a (compile only). Each template's 200 are four test cases of 50
// (quarters of one sample drawn with a fixed seed) compiled on 2 threads, as for the wgmma GEMM.
#include <catch2/catch.hpp>

#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

void compile_quarter(const std::string& name, const std::vector<int64_t>& shape, int quarter,
                     uint64_t seed) {
  auto tmpl = make_template(name.substr(0, name.find("_wgmma")), shape, name);
  std::vector<Config> all = test::sample_configs(*tmpl, 200, seed);
  REQUIRE(all.size() == 200);
  std::vector<CudaSource> sources;
  std::vector<Config> configs;
  for (int i = 50 * quarter; i < 50 * (quarter + 1); ++i) {
    Lowered l = lower(*tmpl, all[i], ir::TargetLimits{});
    INFO(test::describe(*tmpl, all[i]) << "\n" << l.build_error);
    for (const std::string& e : l.verify.errors) INFO(e);
    REQUIRE(l.ok());  // the space's constraints keep every sampled configuration launchable
    REQUIRE(l.source->arch_specific);
    sources.push_back(*l.source);
    configs.push_back(all[i]);
  }
  NvrtcBuilder builder(BuildOptions{}, 2);
  std::vector<CompileResult> results = builder.compile_batch(sources);
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(test::describe(*tmpl, configs[i]) << "\nNVRTC log:\n" << results[i].log);
    CHECK(results[i].ok());
    CHECK(results[i].arch == "sm_90a");
  }
}

}  // namespace

#define CUTUNE_CONV_WGMMA_COMPILE_CASES(name, shape, seed)                                      \
  TEST_CASE(name " configurations 1-50 of 200 compile for sm_90a", "[wgmma][conv][nvrtc]") {    \
    compile_quarter(name, shape, 0, seed);                                                      \
  }                                                                                             \
  TEST_CASE(name " configurations 51-100 of 200 compile for sm_90a", "[wgmma][conv][nvrtc]") {  \
    compile_quarter(name, shape, 1, seed);                                                      \
  }                                                                                             \
  TEST_CASE(name " configurations 101-150 of 200 compile for sm_90a", "[wgmma][conv][nvrtc]") { \
    compile_quarter(name, shape, 2, seed);                                                      \
  }                                                                                             \
  TEST_CASE(name " configurations 151-200 of 200 compile for sm_90a", "[wgmma][conv][nvrtc]") { \
    compile_quarter(name, shape, 3, seed);                                                      \
  }

// ResNet-18 C7 (3x3 stride 2, 128 -> 256), C9 (3x3, 256 -> 256), C2 at batch 16, and an odd
// dilated layer (5x3, stride 2, pad 2, dilation 2; tails everywhere). Element copies (C = 3, as
// ResNet-18's C1) are in the emulator tests: their fully unrolled gathers take NVRTC seconds a
// configuration, too long for 200.
CUTUNE_CONV_WGMMA_COMPILE_CASES("conv2d_fp16_wgmma_nhwc",
                                (std::vector<int64_t>{1, 128, 28, 28, 256, 3, 3, 2, 1, 1}), 2301)
CUTUNE_CONV_WGMMA_COMPILE_CASES("conv2d_bf16_wgmma_nhwc",
                                (std::vector<int64_t>{1, 256, 14, 14, 256, 3, 3, 1, 1, 1}), 2302)
CUTUNE_CONV_WGMMA_COMPILE_CASES("conv2d_fp16_wgmma_nhwc_out16",
                                (std::vector<int64_t>{16, 64, 56, 56, 64, 3, 3, 1, 1, 1}), 2303)
CUTUNE_CONV_WGMMA_COMPILE_CASES("conv2d_bf16_wgmma_nhwc_out16",
                                (std::vector<int64_t>{3, 16, 23, 17, 24, 5, 3, 2, 2, 2}), 2304)
