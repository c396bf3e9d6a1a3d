#pragma once
// Helpers for the tests of the wgmma GEMM's TMA loads and producer warpgroup: sampling
// configurations with given `loads` / `producer` knobs, and lowering a template's kernel built
// with planted-bug hooks (WgmmaGemmSpec::hooks).

#include <optional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/gemm_wgmma.h"
#include "src/codegen/codegen_cuda.h"
#include "src/ir/simplify.h"
#include "src/ir/verify.h"
#include "tests/tensor_core/tc_samples.h"

namespace cutune::test {

// `count` valid configurations whose loads is 1 and whose producer is `producer` (any when
// nullopt), drawn with a fixed seed.
inline std::vector<Config> sample_tma_configs(const Template& t, int count, uint64_t seed,
                                              std::optional<int> producer) {
  std::mt19937_64 rng(seed);
  std::vector<Config> out;
  for (int draws = 0; int(out.size()) < count && draws < count * 400; ++draws) {
    std::optional<Config> c = t.space().sample_valid(rng);
    REQUIRE(c.has_value());
    if (c->get("loads") != 1) continue;
    if (producer && c->get("producer") != *producer) continue;
    out.push_back(*c);
  }
  return out;
}

// The wgmma GEMM template `t` (a GemmWgmmaTemplate) of configuration `c` with `hooks` planted,
// simplified, verified and generated as lower() does.
inline CudaSource hooked_source(const Template& t, const Config& c,
                                const wg::WgmmaGemmSpec::TestHooks& hooks) {
  const auto* gemm = dynamic_cast<const GemmWgmmaTemplate*>(&t);
  REQUIRE(gemm != nullptr);
  wg::WgmmaGemmSpec spec = gemm->spec(c);
  spec.hooks = hooks;
  ir::Kernel kernel = ir::simplify(wg::build_wgmma_gemm(spec, wg::wgmma_params(c)));
  ir::VerifyResult v = ir::verify(kernel, ir::TargetLimits{});
  for (const std::string& e : v.errors) INFO(e);
  REQUIRE(v.ok());
  return generate_cuda(kernel, v.launch);
}

}  // namespace cutune::test
