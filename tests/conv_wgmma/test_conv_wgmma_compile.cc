// The warpgroup-MMA convolution templates lower, verify and compile with NVRTC for sm_90a
// (compile only): per template, the configurations that together hold every pair of knob
// values 4,000 uniform valid samples hold (a greedy pairwise cover, tc_samples.h), as for the
// wgmma GEMM.
#include <catch2/catch.hpp>

#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

void compile_cover(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed) {
  auto tmpl = make_template(name.substr(0, name.find("_wgmma")), shape, name);
  test::compile_pairwise(*tmpl, test::sample_configs(*tmpl, 4000, seed), 80);
}

}  // namespace

// ResNet-18 C7 (3x3 stride 2, 128 -> 256), C9 (3x3, 256 -> 256), C2 at batch 16, and an odd
// dilated layer (5x3, stride 2, pad 2, dilation 2; tails everywhere). Element copies (C = 3, as
// ResNet-18's C1) are in the emulator tests: their fully unrolled gathers take NVRTC seconds a
// configuration, too long for a compile test.
TEST_CASE("conv2d_fp16_wgmma_nhwc: a pairwise cover of the space compiles for sm_90a",
          "[wgmma][conv][nvrtc]") {
  compile_cover("conv2d_fp16_wgmma_nhwc", {1, 128, 28, 28, 256, 3, 3, 2, 1, 1}, 2301);
}

TEST_CASE("conv2d_bf16_wgmma_nhwc: a pairwise cover of the space compiles for sm_90a",
          "[wgmma][conv][nvrtc]") {
  compile_cover("conv2d_bf16_wgmma_nhwc", {1, 256, 14, 14, 256, 3, 3, 1, 1, 1}, 2302);
}

TEST_CASE("conv2d_fp16_wgmma_nhwc_out16: a pairwise cover of the space compiles for sm_90a",
          "[wgmma][conv][nvrtc]") {
  compile_cover("conv2d_fp16_wgmma_nhwc_out16", {16, 64, 56, 56, 64, 3, 3, 1, 1, 1}, 2303);
}

TEST_CASE("conv2d_bf16_wgmma_nhwc_out16: a pairwise cover of the space compiles for sm_90a",
          "[wgmma][conv][nvrtc]") {
  compile_cover("conv2d_bf16_wgmma_nhwc_out16", {3, 16, 23, 17, 24, 5, 3, 2, 2, 2}, 2304);
}
