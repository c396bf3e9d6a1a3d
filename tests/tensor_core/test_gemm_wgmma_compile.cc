// 200 sampled configurations of each warpgroup-MMA GEMM template compile with NVRTC for sm_90a
// (the builder picks it for kernels that use wgmma). Each template's 200 are split into four
// test cases of 50 (quarters of one sample drawn with a fixed seed), compiled on
// 2 threads, to keep every test case within the time the other NVRTC tests take.
#include <catch2/catch.hpp>

#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

void compile_quarter(const std::string& op, const std::string& name,
                     const std::vector<int64_t>& shape, int quarter, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
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

#define CUTUNE_WGMMA_COMPILE_CASES(op, name, shape, seed)                                          \
  TEST_CASE(name " configurations 1-50 of 200 compile for sm_90a", "[wgmma][nvrtc][compile]") {    \
    compile_quarter(op, name, shape, 0, seed);                                                     \
  }                                                                                                \
  TEST_CASE(name " configurations 51-100 of 200 compile for sm_90a", "[wgmma][nvrtc][compile]") {  \
    compile_quarter(op, name, shape, 1, seed);                                                     \
  }                                                                                                \
  TEST_CASE(name " configurations 101-150 of 200 compile for sm_90a", "[wgmma][nvrtc][compile]") { \
    compile_quarter(op, name, shape, 2, seed);                                                     \
  }                                                                                                \
  TEST_CASE(name " configurations 151-200 of 200 compile for sm_90a", "[wgmma][nvrtc][compile]") { \
    compile_quarter(op, name, shape, 3, seed);                                                     \
  }

CUTUNE_WGMMA_COMPILE_CASES("gemm_fp16", "gemm_fp16_wgmma_nn",
                           (std::vector<int64_t>{4096, 4096, 4096}), 1301)
CUTUNE_WGMMA_COMPILE_CASES("gemm_fp16", "gemm_fp16_wgmma_nt",
                           (std::vector<int64_t>{1000, 600, 136}), 1302)
CUTUNE_WGMMA_COMPILE_CASES("gemm_bf16", "gemm_bf16_wgmma_nn", (std::vector<int64_t>{72, 200, 40}),
                           1303)
CUTUNE_WGMMA_COMPILE_CASES("gemm_bf16", "gemm_bf16_wgmma_nt",
                           (std::vector<int64_t>{8192, 8192, 8192}), 1304)
