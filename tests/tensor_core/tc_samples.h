#pragma once
// Shared helpers for the tensor-core tests: fixed configurations and sampling.

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/template.h"
#include "src/lower/lower.h"
#include "src/runtime/nvrtc_builder.h"
#include "tests/kernels/gemm_samples.h"

namespace cutune::test {

// A configuration of the tensor-core GEMM from its knobs as JSON.
inline Config tc_config(const Template& t, const char* knobs) {
  return t.space().from_json(nlohmann::json::parse(knobs));
}

// The generated source of a configuration that must lower.
inline CudaSource tc_source(const Template& t, const Config& c) {
  Lowered l = lower(t, c, ir::TargetLimits{});
  INFO(describe(t, c) << "\n" << l.build_error);
  for (const std::string& e : l.verify.errors) INFO(e);
  REQUIRE(l.ok());
  return *l.source;
}

// Every knob, with the scalar (no cp.async, no ldmatrix) and the full-featured choices.
inline const char* kTcScalar =
    R"({"knobs":{"block_m":32,"block_n":32,"block_k":16,"warp_m":16,"warp_n":16,"stages":2,)"
    R"("smem_layout":0,"copy_bytes":2,"ldmatrix":0,"raster_group":1,"split_k":1,)"
    R"("epilogue_vec":1}})";
inline const char* kTcFull =
    R"({"knobs":{"block_m":64,"block_n":64,"block_k":32,"warp_m":32,"warp_n":32,"stages":3,)"
    R"("smem_layout":2,"copy_bytes":16,"ldmatrix":1,"raster_group":4,"split_k":1,)"
    R"("epilogue_vec":2}})";

// Samples `count` configurations of a template and compiles every one the verifier passes
// with NVRTC for sm_90 (2 jobs): a verifier-passed configuration that fails to compile fails
// the test, and at least half the sample must reach the compiler.
inline void compile_sample(const std::string& op, const std::string& name,
                           const std::vector<int64_t>& shape, int count, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  std::vector<Config> configs = test::sample_configs(*tmpl, count, seed);
  REQUIRE(int(configs.size()) == count);
  std::vector<Config> passed;
  std::vector<CudaSource> sources;
  for (const Config& c : configs) {
    Lowered l = lower(*tmpl, c, ir::TargetLimits{});
    INFO(test::describe(*tmpl, c) << "\n" << l.build_error);
    CHECK(l.build_error.empty());
    if (!l.ok()) continue;
    passed.push_back(c);
    sources.push_back(*l.source);
  }
  NvrtcBuilder builder(BuildOptions{}, 2);
  std::vector<CompileResult> results = builder.compile_batch(sources);
  int compiled = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(test::describe(*tmpl, passed[i]) << "\nNVRTC log:\n" << results[i].log);
    CHECK(results[i].ok());
    compiled += results[i].ok();
  }
  CHECK(compiled >= count / 2);
}

// The configurations among `pool` that together hold every pair of values of two knobs that
// the pool holds (a greedy pairwise cover: each interaction of two knobs the space allows, in a
// few dozen configurations where a uniform sample needs hundreds to reach the rare ones) lower
// with an arch-specific source that passes `check` and compile with NVRTC for sm_90a (2 jobs).
// More than `max_count` picks, or a pair left out, fails the test.
inline void compile_pairwise(const Template& t, std::vector<Config> pool, int max_count,
                             const std::function<void(const Lowered&)>& check = {}) {
  CoverCount count;
  std::vector<Config> configs = covering_configs(
      t, std::move(pool), Cover::pairs, [](const Config&) { return true; }, max_count, &count);
  INFO(t.name() << ": " << configs.size() << " configurations hold " << count.covered << " of "
                << count.seen << " knob-value pairs");
  REQUIRE(count.covered == count.seen);
  std::vector<CudaSource> sources;
  for (const Config& c : configs) {
    Lowered l = lower(t, c, ir::TargetLimits{});
    INFO(describe(t, c) << "\n" << l.build_error);
    for (const std::string& e : l.verify.errors) INFO(e);
    REQUIRE(l.ok());  // the space's constraints keep every sampled configuration launchable
    REQUIRE(l.source->arch_specific);
    if (check) check(l);
    sources.push_back(*l.source);
  }
  NvrtcBuilder builder(BuildOptions{}, 2);
  std::vector<CompileResult> results = builder.compile_batch(sources);
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(describe(t, configs[i]) << "\nNVRTC log:\n" << results[i].log);
    CHECK(results[i].ok());
    CHECK(results[i].arch == "sm_90a");
  }
}

}  // namespace cutune::test
