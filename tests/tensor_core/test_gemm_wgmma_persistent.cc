// Persistent tiles of the wgmma GEMM (kernels/wgmma_blocks.h: `persistent`,
// `last_wave_split`): the grid comes from the device, not the shape (launch_grid.h), the
// kernel walks its tiles by gridDim.x and is correct for any grid, and a part-empty last wave
// is shared out along K into fp32 C. In the emulator with the sanitizer on, on odd shapes,
// with grids forced small (1, 3, 5, 7 blocks: several tiles a block, uneven last waves, pieces
// of K); the launch grid rule, the worker protocol and the features.

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "cost_model/features.h"
#include "src/codegen/launch_grid.h"
#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"
#include "src/measure/worker_protocol.h"
#include "src/target/device_info.h"
#include "tests/tensor_core/wgmma_tma_samples.h"

using namespace cutune;

namespace {

// A persistent TMA configuration with a producer: bm x bn x 32 tiles, `warpgroups` consumer
// warpgroups, a 3-slot ring, paired stores.
Config persistent_config(const Template& t, int bm, int bn, int warpgroups, int pingpong, int split,
                         int pipe = 0, int epilogue = 1, int tma_store = 0) {
  nlohmann::json j = nlohmann::json::parse(fmt::format(
      R"({{"knobs":{{"block_m":{},"block_n":{},"block_k":32,"stages":3,"warpgroups":{},)"
      R"("swizzle":64,"copy_bytes":16,"raster_group":4,"split_k":1,"epilogue":{},)"
      R"("loads":1,"producer":1,"mma_pipe":{},"pingpong":{},"persistent":1,)"
      R"("last_wave_split":{},"tma_store":{}}}}})",
      bm, bn, warpgroups, epilogue, pipe, pingpong, split, tma_store));
  Config c = t.space().from_json(j);
  INFO(t.space().violation(c).value_or(""));
  REQUIRE(t.space().is_valid(c));
  return c;
}

// {"knobs": ...} of `c`, without its index, to edit.
nlohmann::json knobs_of(const Config& c) { return {{"knobs", c.to_json()["knobs"]}}; }

// Runs `c` on grids of each of `grids` blocks (the emulator's override), sanitizer on.
void check_grids(const Template& t, const Config& c, std::initializer_list<int> grids) {
  for (int blocks : grids) {
    emu::EmulatorOptions options;
    options.persistent_grid = blocks;
    emu::Emulator emulator(options);
    EmulatedCheck r = check_in_emulator(t, c, ir::TargetLimits{}, emulator);
    INFO(test::describe(t, c) << "\ngrid " << blocks << ": status " << r.status << ": "
                              << r.message);
    CHECK(r.passed);
  }
}

}  // namespace

TEST_CASE("persistent tiles match on small grids, the last wave split along K",
          "[wgmma][tma][persistent][emulator]") {
  // 127 x 200 in 64 x 64 tiles: 2 x 4 = 8 tiles; K = 72: 3 slices of 32. Grids of 1 block (8
  // tiles in turn), 3 (two whole rounds, then the last 2 tiles' 6 slices in shares of 2: the
  // middle block's share is the end of one tile and the start of the next), 5 (one round, 3
  // tiles' 9 slices in shares of 2 and 1) and 7 (1 tile's 3 slices, one a block, 4 idle).
  for (const char* name : {"gemm_fp16_wgmma_nn", "gemm_bf16_wgmma_nt"}) {
    auto tmpl = make_template(std::string(name).substr(0, 9), {127, 200, 72}, name);
    INFO(name);
    check_grids(*tmpl, persistent_config(*tmpl, 64, 64, 1, 0, 1), {1, 3, 5, 7});
    // Ping-pong: two warpgroups each taking whole tiles in turn, a piece last.
    check_grids(*tmpl, persistent_config(*tmpl, 64, 64, 2, 1, 1, 1), {1, 3, 7});
  }
  // Cooperative warpgroups over 128-row tiles: 255 x 200 is 2 x 4 tiles again.
  auto coop = make_template("gemm_fp16", {255, 200, 72}, "gemm_fp16_wgmma_nt");
  check_grids(*coop, persistent_config(*coop, 128, 64, 2, 0, 1, 1), {3, 7});
  // Without the split the last wave runs its tiles whole; scalar stores too.
  auto nn = make_template("gemm_bf16", {127, 200, 72}, "gemm_bf16_wgmma_nn");
  check_grids(*nn, persistent_config(*nn, 64, 64, 2, 1, 0, 0, 0), {3, 7});
}

TEST_CASE("persistent tiles with the TMA-store epilogue match on small grids",
          "[wgmma][tma][persistent][emulator]") {
  // The store's waits run before every tile's writes, so a block walking several tiles never
  // overwrites a tile in flight; with the last wave split, pieces add by atomics and whole
  // tiles go out by TMA. 127 x 200 in 64 x 64 tiles (8), K = 72 (3 slices).
  auto fp32 = make_template("gemm_fp16", {127, 200, 72}, "gemm_fp16_wgmma_nn");
  // fp32 C a column at a time (64 columns: two 128-byte columns), the last wave split.
  check_grids(*fp32, persistent_config(*fp32, 64, 64, 1, 0, 1, 1, 2, 2), {1, 3, 5});
  // The whole tile, cooperative warpgroups over 128-row tiles, no split.
  auto coop = make_template("gemm_fp16", {255, 200, 72}, "gemm_fp16_wgmma_nt");
  check_grids(*coop, persistent_config(*coop, 128, 64, 2, 0, 0, 1, 2, 1), {3, 7});
  // 16-bit C by stmatrix, ping-pong: each warpgroup its own buffer and barrier.
  auto out16 = make_template("gemm_bf16", {127, 200, 72}, "gemm_bf16_wgmma_nt_out16");
  check_grids(*out16, persistent_config(*out16, 64, 64, 2, 1, 0, 1, 2, 1), {1, 3});
}

TEST_CASE("pieces of the last wave stored instead of added are caught",
          "[wgmma][tma][persistent][emulator][planted]") {
  // 8 tiles of 3 slices on 3 blocks: 2 whole rounds, then the 6 slices of the last 2 tiles in
  // shares of 2, each tile met by two blocks. Stores race on C (and lose a share's sum).
  auto tmpl = make_template("gemm_fp16", {127, 200, 72}, "gemm_fp16_wgmma_nt");
  const Config c = persistent_config(*tmpl, 64, 64, 1, 0, 1);
  emu::EmulatorOptions options;
  options.persistent_grid = 3;
  emu::Emulator emulator(options);
  REQUIRE(check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, {}), emulator).passed);
  wg::WgmmaGemmSpec::TestHooks stored;
  stored.store_pieces = true;
  EmulatedCheck r =
      check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, stored), emulator);
  INFO(r.status << ": " << r.message);
  CHECK_FALSE(r.passed);
  CHECK_THAT(r.message, Catch::Contains("data race on global memory C"));
}

TEST_CASE("persistent tiles into 16-bit C match, without the split",
          "[wgmma][tma][persistent][emulator]") {
  for (const char* name : {"gemm_fp16_wgmma_nt_out16", "gemm_bf16_wgmma_nn_out16"}) {
    auto tmpl = make_template(std::string(name).substr(0, 9), {127, 200, 72}, name);
    INFO(name);
    check_grids(*tmpl, persistent_config(*tmpl, 64, 64, 2, 1, 0), {3, 5});
    // The pieces of a split would add into C with fp32 atomics.
    nlohmann::json j = knobs_of(persistent_config(*tmpl, 64, 64, 2, 1, 0));
    j["knobs"]["last_wave_split"] = 1;
    CHECK(tmpl->space().violation(tmpl->space().from_json(j)).value_or("") ==
          "the last wave's pieces add into fp32 C");
  }
}

TEST_CASE("persistent knobs: constraints, launch bounds and the grid they launch with",
          "[wgmma][tma][persistent]") {
  auto tmpl = make_template("gemm_fp16", {4096, 4096, 4096}, "gemm_fp16_wgmma_nn");
  const ConfigSpace& space = tmpl->space();
  nlohmann::json j = knobs_of(persistent_config(*tmpl, 128, 256, 2, 0, 1, 1));
  j["knobs"]["block_k"] = 64;
  j["knobs"]["swizzle"] = 128;
  const Config c = space.from_json(j);
  REQUIRE(space.is_valid(c));
  Lowered l = lower(*tmpl, c, ir::TargetLimits{});
  REQUIRE(l.ok());
  // The extent is the 16 x 32 = 512 tiles; the launch takes one block an SM.
  CHECK(l.kernel.persistent_blocks_per_sm == 1);
  const LaunchSpec& launch = l.source->launch;
  CHECK(launch.grid.x == 512);
  CHECK(launch.persistent_blocks_per_sm == 1);
  CHECK(launch_grid(launch, 132).x == 132);
  CHECK(launch_grid(launch, target_limits("sm_90").sm_count).x ==
        uint32_t(target_limits("sm_90").sm_count));
  CHECK(launch_grid(launch, 1000).x == 512);  // never more blocks than tiles
  CHECK_THROWS_AS(launch_grid(launch, 0), std::invalid_argument);
  CHECK(with_persistent_grid(launch, 3).grid.x == 3);
  CHECK(with_persistent_grid(launch, 9999).grid.x == 512);
  CHECK(l.source->code.find("cutune_grid_blocks()") != std::string::npos);
  // The worker gets it through its protocol.
  CHECK(launch_spec_from_json(to_json(launch)).persistent_blocks_per_sm == 1);
  // A kernel that is not persistent keeps its grid on any device.
  j["knobs"]["persistent"] = 0;
  j["knobs"]["last_wave_split"] = 0;
  Lowered plain = lower(*tmpl, space.from_json(j), ir::TargetLimits{});
  REQUIRE(plain.ok());
  CHECK(plain.source->launch.persistent_blocks_per_sm == 0);
  CHECK(launch_grid(plain.source->launch, 132).x == 512);
  CHECK(launch_grid(plain.source->launch, 0).x == 512);

  // Persistent tiles need a producer, an unstaged epilogue (or a TMA store), one tile a block
  // by the knob and no split-K; the split needs persistence; ping-pong takes persistent tiles
  // as several a block.
  const std::string rule =
      "persistent tiles need a producer, an unstaged epilogue (or a TMA store), one tile a block "
      "and no split-K";
  for (auto [knob, value] : std::vector<std::pair<const char*, int>>{
           {"epilogue", 2}, {"tiles_per_block", 2}, {"split_k", 2}}) {
    nlohmann::json bad = knobs_of(persistent_config(*tmpl, 64, 64, 1, 0, 1));
    bad["knobs"][knob] = value;
    INFO(knob);
    CHECK(space.violation(space.from_json(bad)).value_or("") == rule);
  }
  nlohmann::json bad = knobs_of(c);
  bad["knobs"]["persistent"] = 0;
  CHECK(space.violation(space.from_json(bad)).value_or("") ==
        "the last wave splits along K only with persistent tiles");
  nlohmann::json pp = knobs_of(persistent_config(*tmpl, 128, 128, 2, 1, 1, 1));
  CHECK(space.is_valid(space.from_json(pp)));
  pp["knobs"]["persistent"] = 0;
  pp["knobs"]["last_wave_split"] = 0;
  CHECK(space.violation(space.from_json(pp)).value_or("") ==
        "ping-pong consumers need several tiles a block and two warpgroups");
}

TEST_CASE("the knobs added for persistence keep every earlier configuration's index",
          "[wgmma][tma][persistent]") {
  // Defined last with default 0 (then the TMA store's knob): a configuration that leaves
  // them 0 has the index it had.
  auto tmpl = make_template("gemm_fp16", {4096, 4096, 4096}, "gemm_fp16_wgmma_nn");
  const ConfigSpace& space = tmpl->space();
  const std::vector<Knob>& knobs = space.knobs();
  // (The cluster knobs come after them: test_gemm_wgmma_cluster.cc.)
  REQUIRE(knobs.size() >= 5);
  CHECK(knobs[knobs.size() - 5].name() == "persistent");
  CHECK(knobs[knobs.size() - 4].name() == "last_wave_split");
  CHECK(knobs[knobs.size() - 3].name() == "tma_store");
  uint64_t before = 1;
  for (size_t i = 0; i + 5 < knobs.size(); ++i) before *= uint64_t(knobs[i].cardinality());
  for (const Config& c : tmpl->reference_configs()) {
    if (c.get("persistent") == 1 || c.get("tma_store") != 0 || c.get("cluster_m") != 1) {
      CHECK(c.index() >= before);
    } else {
      CHECK(c.index() < before);
    }
  }
}

TEST_CASE("persistent tiles are visible to the IR features: blocks, waves, tiles a block",
          "[wgmma][tma][persistent][features]") {
  // 4096 x 4096 in 128 x 256 tiles: 512 tiles. Not persistent: 512 blocks, 4 waves of 132
  // (one block an SM: 97% efficient). Persistent: 132 blocks (sm_90's SMs, target_limits),
  // each ~3.9 tiles, the same 4 rounds; the same products.
  auto tmpl = make_template("gemm_fp16", {4096, 4096, 4096}, "gemm_fp16_wgmma_nt");
  auto f = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  auto value = [&](const Config& c, const std::string& name) {
    std::vector<float> v(size_t(f->size()));
    f->extract(c, v);
    const std::vector<std::string> names = f->names();
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return double(v[i]);
    FAIL("no feature " << name);
    return 0.0;
  };
  auto count = [&](const Config& c, const std::string& name) {
    return std::exp2(value(c, name)) - 1;
  };
  nlohmann::json j = knobs_of(persistent_config(*tmpl, 128, 256, 2, 0, 1, 1));
  const Config persistent = tmpl->space().from_json(j);
  j["knobs"]["persistent"] = 0;
  j["knobs"]["last_wave_split"] = 0;
  const Config plain = tmpl->space().from_json(j);
  const int sms = target_limits("sm_90").sm_count;
  CHECK(count(plain, "kernel.blocks") == Approx(512).epsilon(1e-3));
  CHECK(count(plain, "kernel.tiles_per_block") == Approx(1).epsilon(1e-3));
  CHECK(count(persistent, "kernel.blocks") == Approx(sms).epsilon(1e-3));
  CHECK(count(persistent, "kernel.tiles_per_block") == Approx(512.0 / sms).epsilon(1e-3));
  CHECK(count(persistent, "kernel.waves") == Approx(std::ceil(512.0 / sms)).epsilon(1e-3));
  CHECK(value(persistent, "kernel.wave_efficiency") ==
        Approx(512.0 / (std::ceil(512.0 / sms) * sms)).epsilon(1e-3));
  CHECK(count(persistent, "kernel.mma_ops") == Approx(count(plain, "kernel.mma_ops")));
  CHECK(count(persistent, "kernel.tma_copy_bytes") ==
        Approx(count(plain, "kernel.tma_copy_bytes")));
}
