// The warpgroup-MMA GEMM templates (kernels/gemm_wgmma.h) in the CPU emulator, which emulates
// wgmma, its descriptors and swizzles, and cp.async per thread: sampled configurations match
// the CPU reference on odd shapes within the correctness rule's tolerance, and planted bugs (a
// wrong swizzle, a missing wait_group) are caught.
#include <catch2/catch.hpp>

#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/lower/lower.h"
#include "kernels/wgmma_blocks.h"
#include "src/measure/emulated_check.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

void emulate_sample(const std::string& op, const std::string& name, std::vector<int64_t> shape,
                    int count, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  emu::Emulator emulator;
  std::mt19937_64 rng(seed);
  int ran = 0;
  for (int draws = 0; ran < count && draws < count * 4; ++draws) {
    std::optional<Config> c = tmpl->space().sample_valid(rng);
    REQUIRE(c.has_value());
    EmulatedCheck r = check_in_emulator(*tmpl, *c, ir::TargetLimits{}, emulator);
    if (r.status == "rejected") continue;
    ++ran;
    INFO(test::describe(*tmpl, *c)
         << "\nstatus " << r.status << ": " << r.message << "\nmax rel error " << r.max_rel_error);
    CHECK(r.passed);
  }
  CHECK(ran == count);
}

const char* kSmall =
    R"({"knobs":{"block_m":64,"block_n":64,"block_k":64,"stages":3,"warpgroups":1,)"
    R"("swizzle":128,"copy_bytes":16,"raster_group":1,"split_k":1,"epilogue":1}})";

// The source of a configuration with `from` replaced by `to` everywhere (at least once).
CudaSource planted(const Template& t, const Config& c, const std::string& from,
                   const std::string& to) {
  CudaSource src = test::tc_source(t, c);
  size_t count = 0;
  for (size_t at = src.code.find(from); at != std::string::npos;
       at = src.code.find(from, at + to.size())) {
    src.code.replace(at, from.size(), to);
    ++count;
  }
  INFO(from);
  REQUIRE(count > 0);
  return src;
}

}  // namespace

TEST_CASE("the reference configurations of the wgmma GEMMs match", "[wgmma][emulator]") {
  for (const char* name : {"gemm_fp16_wgmma_nn", "gemm_fp16_wgmma_nt"}) {
    auto tmpl = make_template("gemm_fp16", {136, 200, 72}, name);
    emu::Emulator emulator;
    // cp.async, TMA + producer, 128x256 TMA + producer + mma_pipe, 256x128, 128x256
    // persistent (and with the last wave split along K), 256x128 persistent, ping-pong (4
    // tiles: 2 a block), ping-pong persistent, the 128x256 TMA store (fp32 C: a column at a
    // time, 2 tiles a block) and over persistent tiles, and that in 2x1 clusters, small
    const std::vector<Config> refs = tmpl->reference_configs();
    REQUIRE(refs.size() == 13);
    CHECK(refs[3].get("block_m") == 256);
    CHECK(refs[3].get("block_n") == 128);
    for (int i : {4, 5, 6, 8, 10, 11}) CHECK(refs[size_t(i)].get("persistent") == 1);
    for (int i = 0; i < 13; ++i) CHECK(refs[size_t(i)].get("last_wave_split") == (i == 5));
    for (int i = 0; i < 13; ++i) CHECK(refs[size_t(i)].get("cluster_m") == (i == 11 ? 2 : 1));
    CHECK(refs[11].get("tma_store") == 2);
    CHECK(refs[6].get("block_m") == 256);
    CHECK(refs[7].get("tiles_per_block") == 2);
    CHECK(refs[8].get("pingpong") == 1);
    CHECK(refs[9].get("tma_store") == 2);
    CHECK(refs[9].get("tiles_per_block") == 2);
    CHECK(refs[10].get("tma_store") == 2);
    for (const Config& c : refs) {
      EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator);
      INFO(test::describe(*tmpl, c) << "\nstatus " << r.status << ": " << r.message);
      CHECK(r.passed);
    }
  }
}

TEST_CASE("the knobs' less common choices match", "[wgmma][emulator]") {
  // Two consumer warpgroups with split-K atomics and 32-byte swizzle; the interleaved layout
  // with 8-byte copies, 6 stages and the staged epilogue; 64-byte swizzle, element copies of
  // odd rows, 192-row tiles of three strips.
  struct Case {
    const char* name;
    std::vector<int64_t> shape;
    const char* knobs;
  };
  for (const Case& c :
       {Case{"gemm_fp16_wgmma_nt",
             {200, 72, 96},
             R"({"knobs":{"block_m":128,"block_n":64,"block_k":32,"stages":2,"warpgroups":2,)"
             R"("swizzle":32,"copy_bytes":16,"raster_group":4,"split_k":2,"epilogue":0}})"},
        Case{"gemm_bf16_wgmma_nn",
             {72, 200, 40},
             R"({"knobs":{"block_m":64,"block_n":128,"block_k":32,"stages":6,"warpgroups":1,)"
             R"("swizzle":0,"copy_bytes":8,"raster_group":1,"split_k":1,"epilogue":2}})"},
        Case{"gemm_fp16_wgmma_nn",
             {200, 96, 33},
             R"({"knobs":{"block_m":192,"block_n":64,"block_k":64,"stages":3,"warpgroups":1,)"
             R"("swizzle":64,"copy_bytes":2,"raster_group":8,"split_k":1,"epilogue":1}})"}}) {
    auto tmpl = make_template(std::string(c.name).substr(0, 9), c.shape, c.name);
    Config config = test::tc_config(*tmpl, c.knobs);
    REQUIRE(tmpl->space().is_valid(config));
    emu::Emulator emulator;
    EmulatedCheck r = check_in_emulator(*tmpl, config, ir::TargetLimits{}, emulator);
    INFO(test::describe(*tmpl, config) << "\nstatus " << r.status << ": " << r.message);
    CHECK(r.passed);
  }
}

TEST_CASE("wide split-K: 8 and 16 splits of a long K match, splits without a slice included",
          "[wgmma][emulator]") {
  // K = 544: 17 slices of 32. 8 splits of 3 slices leave the last two splits none, 16 of 2
  // the last seven; their blocks add nothing.
  auto tmpl = make_template("gemm_fp16", {64, 128, 544}, "gemm_fp16_wgmma_nn");
  const ConfigSpace& space = tmpl->space();
  emu::Emulator emulator;
  for (const char* load : {R"("loads":0,"producer":0)", R"("loads":1,"producer":1)"}) {
    for (int split : {2, 4}) {
      std::string knobs = fmt::format(
          R"({{"knobs":{{"block_m":64,"block_n":128,"block_k":32,"stages":3,"warpgroups":1,)"
          R"("swizzle":64,"copy_bytes":16,"raster_group":1,"split_k":{},"epilogue":0,{},)"
          R"("split_k_wide":1}}}})",
          split, load);
      Config config = test::tc_config(*tmpl, knobs.c_str());
      INFO(knobs);
      REQUIRE(space.is_valid(config));
      CHECK(wg::split_k_of(config) == 4 * split);
      // One 64 x 128 output tile: a block per split.
      Lowered l = lower(*tmpl, config, ir::TargetLimits{});
      REQUIRE(l.ok());
      const Dim3& grid = l.source->launch.grid;
      CHECK(int64_t{grid.x} * grid.y * grid.z == 4 * split);
      EmulatedCheck r = check_in_emulator(*tmpl, config, ir::TargetLimits{}, emulator);
      INFO(test::describe(*tmpl, config) << "\nstatus " << r.status << ": " << r.message);
      CHECK(r.passed);
    }
  }
  // Wide takes split_k 2 or 4; every split needs a slice of K (16 splits of 17 slices of 32
  // hold, of 9 slices of 64 do not).
  nlohmann::json j = nlohmann::json::parse(
      R"({"knobs":{"block_m":64,"block_n":128,"block_k":32,"stages":3,"warpgroups":1,)"
      R"("swizzle":64,"copy_bytes":16,"raster_group":1,"split_k":1,"epilogue":0,"split_k_wide":1}})");
  CHECK(space.violation(space.from_json(j)).value_or("") ==
        "wide split-K takes split_k 2 or 4 (to 8 or 16)");
  j["knobs"]["split_k"] = 4;
  j["knobs"]["block_k"] = 64;
  j["knobs"]["swizzle"] = 128;
  CHECK(space.violation(space.from_json(j)).value_or("") == "split-K leaves every split a K slice");
}

TEST_CASE("a split-K reference configuration where few output tiles meet a long K",
          "[wgmma][emulator]") {
  auto splits = [](const std::vector<int64_t>& shape, const char* name) {
    auto tmpl = make_template(std::string(name).substr(0, 9), shape, name);
    std::vector<int64_t> out;
    for (const Config& c : tmpl->reference_configs())
      if (wg::split_k_of(c) > 1) out.push_back(wg::split_k_of(c));
    return out;
  };
  // 4 tiles and 128 slices of 64: 16 splits (64 blocks); 1 tile and 32 slices: 8 (4 slices
  // a split); many tiles, a short K or a 16-bit C: none.
  CHECK(splits({256, 256, 8192}, "gemm_fp16_wgmma_nn") == std::vector<int64_t>{16});
  CHECK(splits({128, 128, 2048}, "gemm_bf16_wgmma_nt") == std::vector<int64_t>{8});
  CHECK(splits({4096, 4096, 4096}, "gemm_fp16_wgmma_nn").empty());
  CHECK(splits({256, 256, 256}, "gemm_fp16_wgmma_nn").empty());
  CHECK(splits({256, 256, 8192}, "gemm_fp16_wgmma_nn_out16").empty());
  // And it computes the product.
  auto tmpl = make_template("gemm_bf16", {128, 128, 2048}, "gemm_bf16_wgmma_nt");
  emu::Emulator emulator;
  for (const Config& c : tmpl->reference_configs()) {
    if (wg::split_k_of(c) == 1) continue;
    EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator);
    INFO(test::describe(*tmpl, c) << "\nstatus " << r.status << ": " << r.message);
    CHECK(r.passed);
  }
}

TEST_CASE("20 gemm_fp16_wgmma_nn configurations on 72x200x40 match", "[wgmma][emulator]") {
  emulate_sample("gemm_fp16", "gemm_fp16_wgmma_nn", {72, 200, 40}, 20, 1201);
}

TEST_CASE("20 gemm_fp16_wgmma_nt configurations on 67x136x48 match", "[wgmma][emulator]") {
  emulate_sample("gemm_fp16", "gemm_fp16_wgmma_nt", {67, 136, 48}, 20, 1202);
}

TEST_CASE("20 gemm_bf16_wgmma_nn configurations on 130x72x33 match", "[wgmma][emulator]") {
  emulate_sample("gemm_bf16", "gemm_bf16_wgmma_nn", {130, 72, 33}, 20, 1203);
}

TEST_CASE("20 gemm_bf16_wgmma_nt configurations on 72x100x72 match", "[wgmma][emulator]") {
  emulate_sample("gemm_bf16", "gemm_bf16_wgmma_nt", {72, 100, 72}, 20, 1204);
}

TEST_CASE("10 _out16 wgmma configurations match", "[wgmma][emulator]") {
  emulate_sample("gemm_fp16", "gemm_fp16_wgmma_nt_out16", {72, 96, 40}, 5, 1205);
  emulate_sample("gemm_bf16", "gemm_bf16_wgmma_nn_out16", {65, 128, 64}, 5, 1206);
}

TEST_CASE("planted bugs in the wgmma GEMM are caught", "[wgmma][emulator]") {
  auto tmpl = make_template("gemm_fp16", {64, 64, 128}, "gemm_fp16_wgmma_nt");
  Config c = test::tc_config(*tmpl, kSmall);
  emu::Emulator emulator;
  REQUIRE(check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator).passed);
  // Descriptors that claim 64-byte swizzling of 128-byte-swizzled tiles read the wrong chunks.
  EmulatedCheck swizzle =
      check_source_in_emulator(*tmpl, planted(*tmpl, c, ", 1)", ", 2)"), emulator);
  CHECK_FALSE(swizzle.passed);
  CHECK(swizzle.status == "wrong_answer");
  // Without the wait, the thread goes on with the slot's next refill and reads the poisoned
  // accumulators; the emulator reports the unfinished wgmma.
  EmulatedCheck no_wait = check_source_in_emulator(
      *tmpl, planted(*tmpl, c, "cutune_wgmma_wait_group_0();", ""), emulator);
  CHECK_FALSE(no_wait.passed);
  INFO(no_wait.message);
  CHECK(no_wait.message.find("wgmma") != std::string::npos);
}
