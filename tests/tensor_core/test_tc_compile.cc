// 200 sampled tensor-core GEMM configurations compile with NVRTC for sm_90, with no failure
// the verifier did not predict: every configuration the verifier passes must compile.

#include <catch2/catch.hpp>

#include "kernels/template.h"
#include "src/runtime/nvrtc_builder.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

TEST_CASE("60 gemm_fp16_nn configurations on 256x256x128 compile", "[tensor_core][nvrtc]") {
  test::compile_sample("gemm_fp16", "gemm_fp16_nn", {256, 256, 128}, 60, 601);
}

TEST_CASE("50 gemm_fp16_nt configurations on 128x72x40 compile", "[tensor_core][nvrtc]") {
  test::compile_sample("gemm_fp16", "gemm_fp16_nt", {128, 72, 40}, 50, 602);
}

TEST_CASE("30 gemm_bf16_nn_out16 configurations on 200x136x264 compile", "[tensor_core][nvrtc]") {
  test::compile_sample("gemm_bf16", "gemm_bf16_nn_out16", {200, 136, 264}, 30, 603);
}

TEST_CASE("30 gemm_bf16_nt configurations on 67x45x33 compile", "[tensor_core][nvrtc]") {
  test::compile_sample("gemm_bf16", "gemm_bf16_nt", {67, 45, 33}, 30, 604);
}

TEST_CASE("30 gemm_fp16_nt_out16 configurations on 1x1000x24 compile", "[tensor_core][nvrtc]") {
  test::compile_sample("gemm_fp16", "gemm_fp16_nt_out16", {1, 1000, 24}, 30, 605);
}
