// The IR features see how a wgmma GEMM loads its slices: TMA's box bytes against cp.async's,
// the TMA ring's slots and the bytes one slot brings (so the bytes in flight per stage), and
// warp specialisation (setmaxnreg).

#include <catch2/catch.hpp>

#include <cmath>

#include <fmt/format.h>

#include "cost_model/features.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

std::vector<float> features(const cost_model::FeatureExtractor& f, const Config& c) {
  std::vector<float> v(size_t(f.size()));
  f.extract(c, v);
  return v;
}

float raw(const cost_model::FeatureExtractor& f, const std::vector<float>& v,
          const std::string& name) {
  std::vector<std::string> names = f.names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return v[i];
  FAIL("no feature " << name);
  return 0;
}

// A count as the features hold it: log2(1 + x), rounded to float (ir_features.cc).
float scaled(double x) { return float(std::log2(1.0 + x)); }

// Undoes the log2(1 + x) scaling of a count feature.
double unscaled(const cost_model::FeatureExtractor& f, const std::vector<float>& v,
                const std::string& name) {
  return std::exp2(double(raw(f, v, name))) - 1;
}

Config config(const Template& t, int loads, int producer) {
  return test::tc_config(
      t, fmt::format(R"({{"knobs":{{"block_m":64,"block_n":64,"block_k":64,"stages":3,)"
                     R"("warpgroups":1,"swizzle":128,"copy_bytes":16,"raster_group":1,)"
                     R"("split_k":1,"epilogue":1,"loads":{},"producer":{}}}}})",
                     loads, producer)
             .c_str());
}

}  // namespace

TEST_CASE("TMA loads are visible to the IR features", "[wgmma][tma][features]") {
  // 128x128x384 in 64x64x64 blocks: 4 blocks, 6 K slices of 64x64 A and 64x64 B halves, so
  // 4 · 6 · 16384 bytes copied whichever way, 16384 per ring slot.
  auto tmpl = make_template("gemm_fp16", {128, 128, 384}, "gemm_fp16_wgmma_nt");
  auto f = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  const double total = 4.0 * 6 * 16384;

  std::vector<float> cp = features(*f, config(*tmpl, 0, 0));
  CHECK(raw(*f, cp, "kernel.async_copy_bytes") == scaled(total));
  CHECK(unscaled(*f, cp, "kernel.tma_copy_bytes") == 0);
  CHECK(raw(*f, cp, "kernel.tma_share") == 0);
  CHECK(unscaled(*f, cp, "kernel.tma_bytes_in_flight") == 0);
  CHECK(raw(*f, cp, "kernel.warp_specialized") == 0);

  for (int producer : {0, 1}) {
    INFO("producer " << producer);
    std::vector<float> tma = features(*f, config(*tmpl, 1, producer));
    CHECK(unscaled(*f, tma, "kernel.async_copy_bytes") == 0);
    CHECK(raw(*f, tma, "kernel.tma_copy_bytes") == scaled(total));
    CHECK(raw(*f, tma, "kernel.tma_share") == 1.0f);
    CHECK(unscaled(*f, tma, "kernel.tma_stages") == Approx(3).epsilon(1e-3));
    CHECK(unscaled(*f, tma, "kernel.tma_bytes_in_flight") == Approx(2 * 16384).epsilon(1e-3));
    CHECK(raw(*f, tma, "kernel.warp_specialized") == float(producer));
    CHECK(unscaled(*f, tma, "kernel.mma_ops") == Approx(unscaled(*f, cp, "kernel.mma_ops")));
    CHECK(unscaled(*f, tma, "kernel.threads_per_block") == Approx(128 + 128 * producer));
  }
}

TEST_CASE("wgmmas kept in flight (mma_pipe) are visible to the IR features", "[wgmma][features]") {
  auto tmpl = make_template("gemm_fp16", {128, 128, 384}, "gemm_fp16_wgmma_nt");
  auto f = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  Config whole = config(*tmpl, 1, 1);
  nlohmann::json j = {{"knobs", whole.to_json()["knobs"]}};
  j["knobs"]["mma_pipe"] = 1;
  Config pipelined = tmpl->space().from_json(j);
  REQUIRE(tmpl->space().is_valid(pipelined));
  CHECK(unscaled(*f, features(*f, whole), "kernel.mma_in_flight") == 0);
  CHECK(unscaled(*f, features(*f, pipelined), "kernel.mma_in_flight") == Approx(1).epsilon(1e-3));
  // The cp.async kernel waits for every group too.
  CHECK(unscaled(*f, features(*f, config(*tmpl, 0, 0)), "kernel.mma_in_flight") == 0);
}

TEST_CASE("several tiles a block are visible to the IR features, the work unchanged",
          "[wgmma][features]") {
  // 128x128x384 in 64x64 tiles: 4 tiles, in 4, 2 or 1 blocks.
  auto tmpl = make_template("gemm_fp16", {128, 128, 384}, "gemm_fp16_wgmma_nt");
  auto f = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  const std::vector<float> one = features(*f, config(*tmpl, 1, 1));
  CHECK(unscaled(*f, one, "kernel.blocks") == Approx(4).epsilon(1e-3));
  CHECK(unscaled(*f, one, "loop.tile_t.trips") == 0);  // no such loop
  for (int tiles : {2, 4}) {
    INFO("tiles a block " << tiles);
    nlohmann::json j = {{"knobs", config(*tmpl, 1, 1).to_json()["knobs"]}};
    j["knobs"]["tiles_per_block"] = tiles;
    const Config c = tmpl->space().from_json(j);
    REQUIRE(tmpl->space().is_valid(c));
    const std::vector<float> v = features(*f, c);
    CHECK(unscaled(*f, v, "kernel.blocks") == Approx(4.0 / tiles).epsilon(1e-3));
    CHECK(unscaled(*f, v, "loop.tile_t.extent") == Approx(tiles).epsilon(1e-3));
    CHECK(unscaled(*f, v, "loop.tile_t.trips") > 0);
    // The same products and the same bytes over the launch.
    CHECK(unscaled(*f, v, "kernel.mma_ops") == Approx(unscaled(*f, one, "kernel.mma_ops")));
    CHECK(unscaled(*f, v, "kernel.tma_copy_bytes") ==
          Approx(unscaled(*f, one, "kernel.tma_copy_bytes")));
  }
}

TEST_CASE("ping-pong consumers are visible to the IR features, the work unchanged",
          "[wgmma][features]") {
  // 256x128x384 in 128x64 tiles of two warpgroups, 2 tiles a block: the warpgroups split each
  // tile's rows (one m64 strip each), or each takes whole tiles (two strips, in turn).
  auto tmpl = make_template("gemm_fp16", {256, 128, 384}, "gemm_fp16_wgmma_nt");
  auto f = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  nlohmann::json j = {{"knobs", config(*tmpl, 1, 1).to_json()["knobs"]}};
  j["knobs"]["block_m"] = 128;
  j["knobs"]["warpgroups"] = 2;
  j["knobs"]["tiles_per_block"] = 2;
  const Config cooperative = tmpl->space().from_json(j);
  j["knobs"]["pingpong"] = 1;
  const Config pingpong = tmpl->space().from_json(j);
  REQUIRE(tmpl->space().is_valid(cooperative));
  REQUIRE(tmpl->space().is_valid(pingpong));
  const std::vector<float> c = features(*f, cooperative), p = features(*f, pingpong);
  CHECK(unscaled(*f, c, "loop.j.extent") == Approx(1).epsilon(1e-3));
  CHECK(unscaled(*f, p, "loop.j.extent") == Approx(2).epsilon(1e-3));
  CHECK(unscaled(*f, c, "kernel.blocks") == Approx(unscaled(*f, p, "kernel.blocks")));
  CHECK(unscaled(*f, p, "kernel.mma_ops") == Approx(unscaled(*f, c, "kernel.mma_ops")));
  CHECK(unscaled(*f, p, "kernel.tma_copy_bytes") ==
        Approx(unscaled(*f, c, "kernel.tma_copy_bytes")));
}
