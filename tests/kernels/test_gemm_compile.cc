// 200 sampled GEMM configurations on odd shapes compile with NVRTC for sm_90, with no failure
// the verifier did not predict: every configuration the verifier passes must compile.

#include <catch2/catch.hpp>

#include "kernels/template.h"
#include "src/lower/lower.h"
#include "src/runtime/nvrtc_builder.h"
#include "tests/kernels/gemm_samples.h"

using namespace cutune;

namespace {

struct Outcome {
  int sampled = 0, rejected = 0, compiled = 0;
};

Outcome compile_sample(const std::string& layout, std::vector<int64_t> shape, int count,
                       uint64_t seed) {
  auto tmpl = make_template("gemm", shape, layout);
  std::vector<Config> configs = test::sample_configs(*tmpl, count, seed);
  REQUIRE(int(configs.size()) == count);
  Outcome out;
  out.sampled = count;
  std::vector<Config> passed;
  std::vector<CudaSource> sources;
  for (const Config& c : configs) {
    Lowered l = lower(*tmpl, c, ir::TargetLimits{});
    // A valid configuration the template cannot build is a template bug, not a prediction.
    INFO(test::describe(*tmpl, c) << "\n" << l.build_error);
    CHECK(l.build_error.empty());
    if (!l.ok()) {
      ++out.rejected;
      continue;
    }
    passed.push_back(c);
    sources.push_back(*l.source);
  }
  NvrtcBuilder builder(BuildOptions{}, 2);
  std::vector<CompileResult> results = builder.compile_batch(sources);
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(test::describe(*tmpl, passed[i]) << "\nNVRTC log:\n" << results[i].log);
    CHECK(results[i].ok());
    CHECK(results[i].ptxas.parsed);
    out.compiled += results[i].ok();
  }
  // Most sampled configurations must reach the compiler, or this test proves little.
  CHECK(out.compiled >= out.sampled / 2);
  return out;
}

}  // namespace

TEST_CASE("60 gemm_nn configurations on 127x255x63 compile", "[gemm][nvrtc]") {
  compile_sample("gemm_nn", {127, 255, 63}, 60, 101);
}

TEST_CASE("50 gemm_nn configurations on 1x1000x17 compile", "[gemm][nvrtc]") {
  compile_sample("gemm_nn", {1, 1000, 17}, 50, 102);
}

TEST_CASE("50 gemm_nn configurations on 4096x1x4096 compile", "[gemm][nvrtc]") {
  compile_sample("gemm_nn", {4096, 1, 4096}, 50, 103);
}

TEST_CASE("40 gemm_nt configurations on 127x255x63 compile", "[gemm][nvrtc]") {
  compile_sample("gemm_nt", {127, 255, 63}, 40, 104);
}
