// The warpgroup-MMA GEMM templates compile with NVRTC for sm_90a (the builder picks it for
// kernels that use wgmma): per template and shape, the configurations that together hold every
// pair of knob values 4,000 uniform valid samples hold (a greedy pairwise cover, tc_samples.h;
// about a quarter of the 200 uniform samples this test compiled before, with the rare pairs a
// uniform sample misses), compiled on 2 threads.
#include <catch2/catch.hpp>

#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

void compile_cover(const std::string& op, const std::string& name,
                   const std::vector<int64_t>& shape, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  test::compile_pairwise(*tmpl, test::sample_configs(*tmpl, 4000, seed), 80);
}

}  // namespace

TEST_CASE("gemm_fp16_wgmma_nn at 4096x4096x4096: a pairwise cover of the space compiles for sm_90a",
          "[wgmma][nvrtc][compile]") {
  compile_cover("gemm_fp16", "gemm_fp16_wgmma_nn", {4096, 4096, 4096}, 1301);
}

TEST_CASE("gemm_fp16_wgmma_nt at 1000x600x136: a pairwise cover of the space compiles for sm_90a",
          "[wgmma][nvrtc][compile]") {
  compile_cover("gemm_fp16", "gemm_fp16_wgmma_nt", {1000, 600, 136}, 1302);
}

TEST_CASE("gemm_bf16_wgmma_nn at 72x200x40: a pairwise cover of the space compiles for sm_90a",
          "[wgmma][nvrtc][compile]") {
  compile_cover("gemm_bf16", "gemm_bf16_wgmma_nn", {72, 200, 40}, 1303);
}

TEST_CASE("gemm_bf16_wgmma_nt at 8192x8192x8192: a pairwise cover of the space compiles for sm_90a",
          "[wgmma][nvrtc][compile]") {
  compile_cover("gemm_bf16", "gemm_bf16_wgmma_nt", {8192, 8192, 8192}, 1304);
}
