#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/analytical_prior.h"
#include "cost_model/ir_features.h"
#include "kernels/template.h"
#include "src/target/device_info.h"

using namespace cutune;
using namespace cutune::cost_model;

namespace {

struct Scored {
  std::unique_ptr<Template> tmpl;
  std::unique_ptr<FeatureExtractor> features;
  std::unique_ptr<AnalyticalPrior> prior;

  Scored(const std::string& op, std::vector<int64_t> shape, const std::string& name,
         const std::string& family)
      : tmpl(make_template(op, shape, name)),
        features(make_ir_features(*tmpl, verifier_limits("sm_90"))),
        prior(make_analytical_prior(*features, prior_target(target_limits("sm_90"), family))) {}

  std::vector<float> row(const Config& c) const {
    std::vector<float> out(features->size());
    features->extract(c, out);
    return out;
  }
  double seconds(const Config& c) const { return prior->estimate(row(c)).seconds; }
  // The share of `others` the prior ranks above c (0: c is estimated fastest).
  double rank_share(const Config& c, const std::vector<Config>& others) const {
    const double mine = seconds(c);
    int faster = 0;
    for (const Config& o : others) faster += seconds(o) < mine;
    return double(faster) / double(others.size());
  }
  std::vector<Config> sample(int n, uint64_t seed) const {
    std::mt19937_64 rng(seed);
    std::vector<Config> out;
    for (int i = 0; i < n; ++i) {
      if (auto c = tmpl->space().sample_valid(rng, 10000)) out.push_back(*c);
    }
    return out;
  }
};

}  // namespace

TEST_CASE("prior_target reads the device and the family's tensor rate") {
  const DeviceInfo h100 = target_limits("sm_90");
  const PriorTarget wgmma = prior_target(h100, "wgmma");
  CHECK(wgmma.sm_count == 132);
  CHECK(wgmma.clock_hz == Approx(1.98e9));
  CHECK(wgmma.dram_bytes_per_second == Approx(2619e6 * 2 * 640));
  CHECK(wgmma.tensor_flops == 4096);
  CHECK(prior_target(h100, "mma").tensor_flops < wgmma.tensor_flops);
  CHECK(prior_target(target_limits("sm_80"), "mma").tensor_flops == 2048);
  CHECK(prior_target(target_limits("sm_80"), "simt").fma_flops == 128);
}

TEST_CASE("the analytical prior needs IR features") {
  auto tmpl = make_template("gemm", {256, 256, 256}, "gemm_nn");
  auto knobs = make_knob_features(tmpl->space());
  CHECK(make_analytical_prior(*knobs, PriorTarget{}) == nullptr);
  CHECK_THROWS_AS(AnalyticalPrior({"kernel.blocks"}, PriorTarget{}), std::invalid_argument);
}

TEST_CASE("the prior ranks the wgmma GEMM's large TMA tiles above cp.async and small tiles") {
  Scored s("gemm", {4096, 4096, 4096}, "gemm_fp16_wgmma_nt", "wgmma");
  const std::vector<Config> refs = s.tmpl->reference_configs();
  REQUIRE(refs.size() >= 5);
  // usual 128x128 cp.async, its TMA + producer form, 128x256, ping-pong, ..., 64x64 last.
  const double usual = s.seconds(refs[0]), tma = s.seconds(refs[1]), large = s.seconds(refs[2]);
  const double small = s.seconds(refs.back());
  CHECK(tma < usual);
  CHECK(large < usual);
  CHECK(large < small);
  // Every estimate is within a factor of the peak: 2·4096³ flops at 4096 flop/clk on 132 SMs.
  const double ideal = 2.0 * 4096 * 4096 * 4096 / (132 * 4096 * 1.98e9);
  for (const Config& c : refs) {
    CHECK(s.seconds(c) > ideal);
    CHECK(s.seconds(c) < 20 * ideal);
  }
  // Its persistent form (a block an SM walking 4 rounds of tiles) pays the block's launch and
  // first fill once.
  auto persistent = std::find_if(refs.begin(), refs.end(), [&](const Config& c) {
    return c.get("persistent") == 1 && c.get("block_n") == 256 && c.get("last_wave_split") == 0 &&
           c.get("tma_store") == 0;
  });
  REQUIRE(persistent != refs.end());
  CHECK(s.seconds(*persistent) < large);
  // The large TMA tile sits in the top tenth of random valid configurations.
  CHECK(s.rank_share(refs[2], s.sample(200, 7)) < 0.1);
}

TEST_CASE("the prior ranks the hand-tuned SIMT GEMM configuration in the top tenth") {
  // At 4096³ (at 1024³ its 128x128 tiles leave half of 132 SMs idle, and the prior says so).
  Scored s("gemm", {4096, 4096, 4096}, "gemm_nn", "simt");
  const std::vector<Config> others = s.sample(200, 11);
  const std::vector<Config> refs = s.tmpl->reference_configs();
  REQUIRE(!refs.empty());
  CHECK(s.rank_share(refs.front(), others) < 0.1);
}

TEST_CASE("the prior's terms: waves, latency hiding and fit") {
  Scored s("gemm", {4096, 4096, 4096}, "gemm_fp16_wgmma_nt", "wgmma");
  const Config large = s.tmpl->reference_configs()[2];
  std::vector<float> row = s.row(large);
  const PriorEstimate base = s.prior->estimate(row);
  CHECK(base.fits);
  CHECK_FALSE(base.spills);
  CHECK(base.tensor > 0);
  CHECK(base.hiding == Approx(1.0));
  CHECK(base.body >= base.tensor);
  const std::vector<std::string> names = s.features->names();
  auto column = [&](const std::string& n) {
    return size_t(std::find(names.begin(), names.end(), n) - names.begin());
  };
  // Half the wave's slots idle: the body takes twice as long.
  std::vector<float> half = row;
  half[column("kernel.wave_efficiency")] = row[column("kernel.wave_efficiency")] / 2;
  CHECK(s.prior->estimate(half).seconds > 1.5 * base.seconds);
  // A ring with little in flight hides less of the latency.
  std::vector<float> shallow = row;
  shallow[column("kernel.tma_bytes_in_flight")] = 10;  // log2(1 + 1023) bytes
  CHECK(s.prior->estimate(shallow).hiding < 0.1);
  CHECK(s.prior->estimate(shallow).seconds > base.seconds);
  // No block fits: last.
  std::vector<float> none = row;
  none[column("kernel.blocks_per_sm")] = 0;
  CHECK_FALSE(s.prior->estimate(none).fits);
  CHECK(s.prior->estimate(none).seconds > 100 * base.seconds);
}
