// The wgmma GEMM's TMA knobs (loads = tma, with and without a producer warpgroup) lower and
// compile with NVRTC for sm_90a: per template and shape, the TMA configurations that together
// hold every pair of knob values (producer and tma_store included) 4,000 valid TMA samples
// hold (a greedy pairwise cover, tc_samples.h), of gemm_fp16_wgmma_nn at 4096³ and
// gemm_bf16_wgmma_nt at 1000x600x136.
#include <catch2/catch.hpp>

#include "tests/tensor_core/wgmma_tma_samples.h"

using namespace cutune;

namespace {

void compile_tma_cover(const std::string& op, const std::string& name,
                       const std::vector<int64_t>& shape, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  std::vector<Config> pool = test::sample_tma_configs(*tmpl, 4000, seed, std::nullopt);
  REQUIRE(pool.size() == 4000);
  test::compile_pairwise(*tmpl, std::move(pool), 80, [](const Lowered& l) {
    // A's and B's, and C's with the TMA store.
    const std::vector<ir::TensorMapParam>& maps = l.kernel.tensor_maps;
    REQUIRE((maps.size() == 2 || (maps.size() == 3 && maps[2].name == "C_map")));
  });
}

}  // namespace

TEST_CASE("gemm_fp16_wgmma_nn TMA configurations at 4096x4096x4096: a pairwise cover compiles "
          "for sm_90a",
          "[wgmma][tma][nvrtc][compile]") {
  compile_tma_cover("gemm_fp16", "gemm_fp16_wgmma_nn", {4096, 4096, 4096}, 1501);
}

TEST_CASE("gemm_bf16_wgmma_nt TMA configurations at 1000x600x136: a pairwise cover compiles "
          "for sm_90a",
          "[wgmma][tma][nvrtc][compile]") {
  compile_tma_cover("gemm_bf16", "gemm_bf16_wgmma_nt", {1000, 600, 136}, 1503);
}
