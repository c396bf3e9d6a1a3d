// 200 sampled configurations of the wgmma GEMM's TMA knobs (loads = tma, half of them with a
// producer warpgroup) lower and compile with NVRTC for sm_90a: 100 of gemm_fp16_wgmma_nn at
// 4096³ and 100 of gemm_bf16_wgmma_nt at 1000x600x136, in four cases of 50.
#include <catch2/catch.hpp>

#include "tests/tensor_core/wgmma_tma_samples.h"

using namespace cutune;

namespace {

void compile_tma_half(const std::string& op, const std::string& name,
                      const std::vector<int64_t>& shape, int producer, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  std::vector<Config> configs = test::sample_tma_configs(*tmpl, 50, seed, producer);
  REQUIRE(configs.size() == 50);
  std::vector<CudaSource> sources;
  for (const Config& c : configs) {
    Lowered l = lower(*tmpl, c, ir::TargetLimits{});
    INFO(test::describe(*tmpl, c) << "\n" << l.build_error);
    for (const std::string& e : l.verify.errors) INFO(e);
    REQUIRE(l.ok());
    REQUIRE(l.source->arch_specific);
    REQUIRE(l.kernel.tensor_maps.size() == 2);
    sources.push_back(*l.source);
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

TEST_CASE("50 gemm_fp16_wgmma_nn TMA configurations without a producer compile for sm_90a",
          "[wgmma][tma][nvrtc][compile]") {
  compile_tma_half("gemm_fp16", "gemm_fp16_wgmma_nn", {4096, 4096, 4096}, 0, 1501);
}

TEST_CASE("50 gemm_fp16_wgmma_nn TMA configurations with a producer compile for sm_90a",
          "[wgmma][tma][nvrtc][compile]") {
  compile_tma_half("gemm_fp16", "gemm_fp16_wgmma_nn", {4096, 4096, 4096}, 1, 1502);
}

TEST_CASE("50 gemm_bf16_wgmma_nt TMA configurations without a producer compile for sm_90a",
          "[wgmma][tma][nvrtc][compile]") {
  compile_tma_half("gemm_bf16", "gemm_bf16_wgmma_nt", {1000, 600, 136}, 0, 1503);
}

TEST_CASE("50 gemm_bf16_wgmma_nt TMA configurations with a producer compile for sm_90a",
          "[wgmma][tma][nvrtc][compile]") {
  compile_tma_half("gemm_bf16", "gemm_bf16_wgmma_nt", {1000, 600, 136}, 1, 1504);
}
