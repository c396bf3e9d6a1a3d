// The wgmma GEMM templates with loads = tma (cp.async.bulk.tensor boxes and mbarriers) and a
// producer warpgroup (kernels/gemm_wgmma.h) in the CPU emulator, which emulates TMA's box
// images, swizzles and zero fill and the mbarriers' phases and transaction counts: every
// layout/swizzle pair and sampled configurations on odd shapes match the CPU reference, and
// bugs planted through WgmmaGemmSpec::hooks (a tensor map swizzle other than the descriptors',
// a wrong expect_tx, a missing wait on the full barrier) are caught.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "src/ir/hopper_intrinsics.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"
#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"
#include "tests/tensor_core/wgmma_tma_samples.h"

using namespace cutune;

namespace {

std::string knobs(int bm, int bn, int bk, int stages, int warpgroups, int swizzle, int epilogue,
                  int producer, int split_k = 1) {
  return fmt::format(
      R"({{"knobs":{{"block_m":{},"block_n":{},"block_k":{},"stages":{},"warpgroups":{},)"
      R"("swizzle":{},"copy_bytes":16,"raster_group":1,"split_k":{},"epilogue":{},)"
      R"("loads":1,"producer":{}}}}})",
      bm, bn, bk, stages, warpgroups, swizzle, split_k, epilogue, producer);
}

void check_config(const Template& t, const Config& c, emu::Emulator& emulator) {
  EmulatedCheck r = check_in_emulator(t, c, ir::TargetLimits{}, emulator);
  INFO(test::describe(t, c) << "\nstatus " << r.status << ": " << r.message << "\nmax rel error "
                            << r.max_rel_error);
  CHECK(r.passed);
}

void emulate_tma_sample(const std::string& op, const std::string& name, std::vector<int64_t> shape,
                        int count, uint64_t seed, std::optional<int> producer) {
  auto tmpl = make_template(op, shape, name);
  std::vector<Config> configs = test::sample_tma_configs(*tmpl, count, seed, producer);
  REQUIRE(int(configs.size()) == count);
  emu::Emulator emulator;
  for (const Config& c : configs) check_config(*tmpl, c, emulator);
}

}  // namespace

TEST_CASE("the TMA knobs: constraints, threads, tensor maps and launch bounds", "[wgmma][tma]") {
  auto tmpl = make_template("gemm_fp16", {72, 200, 40}, "gemm_fp16_wgmma_nn");
  const ConfigSpace& space = tmpl->space();
  // copy_bytes keeps one value with TMA; a producer needs TMA.
  Config c = test::tc_config(*tmpl, knobs(64, 64, 64, 3, 1, 128, 1, 1).c_str());
  REQUIRE(space.is_valid(c));
  nlohmann::json j = {{"knobs", c.to_json()["knobs"]}};
  j["knobs"]["copy_bytes"] = 8;
  CHECK_FALSE(space.is_valid(space.from_json(j)));
  j["knobs"]["copy_bytes"] = 16;
  j["knobs"]["loads"] = 0;
  CHECK(space.violation(space.from_json(j)).value_or("") ==
        "a producer warpgroup needs TMA loads of both operands");
  // A configuration given without the new knobs loads by cp.async, as before.
  Config old = test::tc_config(
      *tmpl, R"({"knobs":{"block_m":64,"block_n":64,"block_k":64,"stages":3,"warpgroups":1,)"
             R"("swizzle":128,"copy_bytes":16,"raster_group":1,"split_k":1,"epilogue":1}})");
  CHECK(old.get("loads") == 0);
  CHECK(old.get("producer") == 0);
  CHECK(lower(*tmpl, old, ir::TargetLimits{}).kernel.tensor_maps.empty());

  // 16-byte row strides: K % 8 (and N % 8 for nn).
  auto odd_k = make_template("gemm_fp16", {72, 200, 33}, "gemm_fp16_wgmma_nt");
  auto odd_n = make_template("gemm_fp16", {72, 201, 40}, "gemm_fp16_wgmma_nn");
  auto odd_n_nt = make_template("gemm_fp16", {72, 201, 40}, "gemm_fp16_wgmma_nt");
  const std::string k64 = knobs(64, 64, 32, 3, 1, 64, 0, 0);
  CHECK_FALSE(odd_k->space().is_valid(test::tc_config(*odd_k, k64.c_str())));
  CHECK_FALSE(odd_n->space().is_valid(test::tc_config(*odd_n, k64.c_str())));
  CHECK(odd_n_nt->space().is_valid(test::tc_config(*odd_n_nt, k64.c_str())));

  // Producer: 128 more threads, setmaxnreg both ways, __launch_bounds__(threads, 1), one tensor
  // map per operand whose box is one layout column with the descriptors' swizzle.
  for (int producer : {0, 1}) {
    Config p = test::tc_config(*tmpl, knobs(128, 64, 64, 4, 2, 128, 2, producer).c_str());
    REQUIRE(space.is_valid(p));
    Lowered l = lower(*tmpl, p, ir::TargetLimits{});
    REQUIRE(l.ok());
    INFO("producer " << producer);
    CHECK(l.source->launch.block.volume() == 256u + 128u * producer);
    CHECK(l.kernel.min_blocks == producer);
    REQUIRE(l.kernel.tensor_maps.size() == 2);
    const ir::TensorMapDesc& a = l.kernel.tensor_maps[0].desc;
    const ir::TensorMapDesc& b = l.kernel.tensor_maps[1].desc;
    CHECK(a.buffer == "A");
    CHECK(a.dims[0] == 40);
    CHECK(a.dims[1] == 72);
    CHECK(a.box[0] == 64);
    CHECK(a.box[1] == 128);
    CHECK(a.swizzle == ir::TmaSwizzle::b128);
    // B-nn is MN-major: boxes of 64 columns of N by block_k rows of K.
    CHECK(b.buffer == "B");
    CHECK(b.dims[0] == 200);
    CHECK(b.dims[1] == 40);
    CHECK(b.row_stride_bytes == 400);
    CHECK(b.box[0] == 64);
    CHECK(b.box[1] == 64);
    CHECK(ir::tensor_map_error(a, 72 * 40).empty());
    CHECK(ir::tensor_map_error(b, 40 * 200).empty());
    const std::string& code = l.source->code;
    CHECK((code.find("setmaxnreg.inc.sync.aligned.u32 232") != std::string::npos) == producer);
    CHECK((code.find("setmaxnreg.dec.sync.aligned.u32 40") != std::string::npos) == producer);
    CHECK(code.find("cp.async.bulk.tensor.2d") != std::string::npos);
    CHECK(code.find("cp.async.cg") == std::string::npos);
    CHECK(code.find("cutune_mbarrier_arrive_expect_tx(&mbar_full[") != std::string::npos);
    // 128x64 A + 64x64 B halves per slot.
    CHECK(code.find(", 24576);") != std::string::npos);
  }
}

TEST_CASE("TMA loads match through every layout and swizzle", "[wgmma][tma][emulator]") {
  // The canonical layouts as TMA box images: K-major A and B-nt, MN-major B-nn, each swizzle
  // (none: the interleaved layout of 16-byte box rows), tails in M, N and K.
  emu::Emulator emulator;
  for (const char* name : {"gemm_fp16_wgmma_nn", "gemm_fp16_wgmma_nt"}) {
    auto tmpl = make_template("gemm_fp16", {72, 136, 72}, name);
    for (int swizzle : {0, 32, 64, 128}) {
      const int bk = swizzle == 128 ? 64 : 32;
      Config c = test::tc_config(
          *tmpl, knobs(64, 64, bk, 3, 1, swizzle, 1, swizzle >= 64 ? 1 : 0).c_str());
      REQUIRE(tmpl->space().is_valid(c));
      check_config(*tmpl, c, emulator);
    }
  }
}

TEST_CASE("10 gemm_fp16_wgmma_nn TMA configurations without a producer on 72x200x40 match",
          "[wgmma][tma][emulator]") {
  emulate_tma_sample("gemm_fp16", "gemm_fp16_wgmma_nn", {72, 200, 40}, 10, 1401, 0);
}

TEST_CASE("10 gemm_fp16_wgmma_nn TMA configurations with a producer on 72x200x40 match",
          "[wgmma][tma][emulator]") {
  emulate_tma_sample("gemm_fp16", "gemm_fp16_wgmma_nn", {72, 200, 40}, 10, 1402, 1);
}

TEST_CASE("10 gemm_bf16_wgmma_nt TMA configurations without a producer on 67x136x48 match",
          "[wgmma][tma][emulator]") {
  emulate_tma_sample("gemm_bf16", "gemm_bf16_wgmma_nt", {67, 136, 48}, 10, 1403, 0);
}

TEST_CASE("10 gemm_bf16_wgmma_nt TMA configurations with a producer on 67x136x48 match",
          "[wgmma][tma][emulator]") {
  emulate_tma_sample("gemm_bf16", "gemm_bf16_wgmma_nt", {67, 136, 48}, 10, 1404, 1);
}

TEST_CASE("6 _out16 TMA configurations match", "[wgmma][tma][emulator]") {
  emulate_tma_sample("gemm_fp16", "gemm_fp16_wgmma_nt_out16", {72, 96, 40}, 3, 1405, std::nullopt);
  emulate_tma_sample("gemm_bf16", "gemm_bf16_wgmma_nn_out16", {65, 128, 64}, 3, 1406, std::nullopt);
}

TEST_CASE("planted bugs in the TMA path are caught", "[wgmma][tma][emulator][planted]") {
  auto tmpl = make_template("gemm_fp16", {64, 64, 192}, "gemm_fp16_wgmma_nn");
  emu::Emulator emulator;
  for (int producer : {0, 1}) {
    Config c = test::tc_config(*tmpl, knobs(64, 64, 64, 2, 1, 128, 1, producer).c_str());
    REQUIRE(tmpl->space().is_valid(c));
    INFO("producer " << producer);
    REQUIRE(check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, {}), emulator).passed);

    // The tensor maps do not swizzle, the descriptors read 128-byte swizzled tiles.
    wg::WgmmaGemmSpec::TestHooks swizzle;
    swizzle.wrong_map_swizzle = true;
    EmulatedCheck r =
        check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, swizzle), emulator);
    CHECK(r.status == "wrong_answer");

    // An expect_tx 16 bytes too large never completes the phase: a deadlock, reported.
    wg::WgmmaGemmSpec::TestHooks more;
    more.expect_tx_delta = 16;
    r = check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, more), emulator);
    INFO(r.message);
    CHECK(r.status == "barrier_divergence");
    CHECK_THAT(r.message, Catch::Contains("mbarrier deadlock"));

    // One 16 bytes too small: the emulator completes each box's bytes at once, so the count
    // steps over zero (to -16) and the phase never completes, reported with the count.
    wg::WgmmaGemmSpec::TestHooks fewer;
    fewer.expect_tx_delta = -16;
    r = check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, fewer), emulator);
    INFO(r.message);
    CHECK(r.status == "barrier_divergence");
    CHECK_THAT(r.message, Catch::Contains("tx-count -16 bytes"));
    // One that counts B's box too few completes the phase while B is still in flight.
    wg::WgmmaGemmSpec::TestHooks without_b;
    without_b.expect_tx_delta = -64 * 64 * 2;
    r = check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, without_b), emulator);
    INFO(r.message);
    CHECK_FALSE(r.passed);
    CHECK_THAT(r.message, Catch::Contains("expect_tx count is too small"));

    // Without the wait on the full barrier, wgmma reads the slot before the copies land:
    // seen from the wgmma (it reads what the copy has not written yet), or from the copy (it
    // lands while the wgmma that reads the slot is in flight), whichever the order of the
    // threads meets first (the elected lane decides who issues).
    wg::WgmmaGemmSpec::TestHooks no_wait;
    no_wait.skip_full_wait = true;
    r = check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, no_wait), emulator);
    INFO(r.status << ": " << r.message);
    CHECK_FALSE(r.passed);
    CHECK_THAT(
        r.message,
        (Catch::Contains("the wgmma reads shared memory") &&
         Catch::Contains("that the TMA load on line") && Catch::Contains("has not written yet")) ||
            (Catch::Contains("TMA load: writes shared memory") &&
             Catch::Contains("that the wgmma on line") && Catch::Contains("still reads")));
  }
}

TEST_CASE("the verifier takes warpgroup-uniform branches around wgmma, not around a barrier",
          "[wgmma][tma][verify]") {
  auto tmpl = make_template("gemm_fp16", {256, 256, 256}, "gemm_fp16_wgmma_nt");
  Config c = test::tc_config(*tmpl, knobs(128, 128, 64, 4, 2, 128, 1, 1).c_str());
  Lowered l = lower(*tmpl, c, ir::TargetLimits{});
  for (const std::string& e : l.verify.errors) INFO(e);
  REQUIRE(l.ok());
  // The same branch on tx / 64 (half a warpgroup) is divergent for the warpgroup.
  using namespace ir;
  Expr tx = ir::int_var("tx"), half = ir::int_var("half");
  Stmt mma = setmaxnreg(true, 232);
  auto kernel_with = [&](const Expr& value, const Stmt& inside) {
    Kernel k;
    k.name = "branch";
    k.body = For::make("tx", 0, 256, ForKind::thread_x,
                       LetStmt::make("half", value, IfThenElse::make(half < 1, inside)));
    return verify(k, TargetLimits{"sm_90a"});
  };
  CHECK(kernel_with(tx / 128, mma).ok());
  CHECK_FALSE(kernel_with(tx / 64, mma).ok());
  VerifyResult sync = kernel_with(tx / 128, Sync::make());
  REQUIRE(sync.errors.size() == 1);
  CHECK_THAT(sync.errors[0], Catch::Contains("barrier (sync) is under a thread-dependent"));
  // Broadcast from lane 0 (as the templates make it), the index is still a warpgroup's.
  CHECK(kernel_with(warp_uniform(tx / 128), mma).ok());
  CHECK_FALSE(kernel_with(warp_uniform(tx / 64), mma).ok());
  // The broadcast itself is warp-collective: not under a branch that splits a warp.
  VerifyResult split = kernel_with(tx / 16, Evaluate::make(warp_uniform(tx / 128)));
  REQUIRE(split.errors.size() == 1);
  CHECK_THAT(split.errors[0], Catch::Contains("warp-collective cutune_warp_uniform is under"));
}

TEST_CASE("wgmmas kept in flight across slices (mma_pipe) match, with a producer only",
          "[wgmma][tma][emulator]") {
  // K = 200 in slices of 32: 7 slices through rings of 2 to 4 slots, so that slots are
  // released one slice late many times over; K = 24: a single (partial) slice.
  emu::Emulator emulator;
  for (const char* name : {"gemm_fp16_wgmma_nn", "gemm_fp16_wgmma_nt"}) {
    for (int64_t k : {200, 24}) {
      auto tmpl = make_template("gemm_fp16", {72, 136, k}, name);
      for (int stages : {2, 3, 4}) {
        nlohmann::json j = nlohmann::json::parse(knobs(64, 64, 32, stages, 1, 64, 1, 1));
        j["knobs"]["mma_pipe"] = 1;
        Config c = tmpl->space().from_json(j);
        INFO(name << " K " << k << " stages " << stages);
        REQUIRE(tmpl->space().is_valid(c));
        Lowered l = lower(*tmpl, c, ir::TargetLimits{});
        REQUIRE(l.ok());
        const std::string& code = l.source->code;
        // In the loop all but the latest group is waited for; after it, every group.
        CHECK(code.find("cutune_wgmma_wait_group_1()") != std::string::npos);
        CHECK(code.find("cutune_wgmma_wait_group_0()") != std::string::npos);
        check_config(*tmpl, c, emulator);
        j["knobs"]["mma_pipe"] = 0;
        const std::string whole =
            lower(*tmpl, tmpl->space().from_json(j), ir::TargetLimits{}).source->code;
        CHECK(whole.find("cutune_wgmma_wait_group_1()") == std::string::npos);
      }
    }
  }
  // Releasing each slice's slot right after its wait_group 1 lets the producer refill it while
  // the slice's wgmmas may still read it; the emulator reads their operands at issue, so the
  // products would still match, but it reports the refill.
  {
    auto tmpl = make_template("gemm_fp16", {72, 136, 200}, "gemm_fp16_wgmma_nn");
    nlohmann::json j = nlohmann::json::parse(knobs(64, 64, 32, 2, 1, 64, 1, 1));
    j["knobs"]["mma_pipe"] = 1;
    Config c = tmpl->space().from_json(j);
    wg::WgmmaGemmSpec::TestHooks early;
    early.release_in_flight = true;
    EmulatedCheck r =
        check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, early), emulator);
    INFO(r.status << ": " << r.message);
    CHECK(r.status == "crashed");
    CHECK_THAT(r.message, Catch::Contains("TMA load: writes shared memory") &&
                              Catch::Contains("no wgmma.wait_group has completed it yet"));
    // The same configuration without the hook passes (the loop above checks it too).
    check_config(*tmpl, c, emulator);
  }
  // Without a producer a ring of 2 slots would have no slot to load ahead into.
  auto tmpl = make_template("gemm_fp16", {72, 136, 200}, "gemm_fp16_wgmma_nn");
  nlohmann::json j = nlohmann::json::parse(knobs(64, 64, 32, 2, 1, 64, 1, 0));
  j["knobs"]["mma_pipe"] = 1;
  CHECK(tmpl->space().violation(tmpl->space().from_json(j)).value_or("") ==
        "wgmmas stay in flight across slices only with a producer or a ring of 3 or more slots");
}

TEST_CASE("rings without a producer refill their slots, with mma_pipe one slice less ahead",
          "[wgmma][tma][emulator]") {
  // cp.async rings (released by the block's barrier) and TMA rings without a producer
  // (released through their empty barriers: the elected thread waits for a slot's release
  // while the other threads go on to the wgmma), 3 and 5 slots, 7 slices and 2, wgmmas kept
  // in flight or not.
  emu::Emulator emulator;
  for (const char* name : {"gemm_fp16_wgmma_nn", "gemm_fp16_wgmma_nt"}) {
    for (int64_t k : {200, 40}) {
      auto tmpl = make_template("gemm_fp16", {72, 136, k}, name);
      for (int loads : {0, 1}) {
        for (int stages : {3, 5}) {
          for (int pipe : {0, 1}) {
            nlohmann::json j = nlohmann::json::parse(knobs(64, 64, 32, stages, 1, 64, 1, 0));
            j["knobs"]["loads"] = loads;
            j["knobs"]["mma_pipe"] = pipe;
            Config c = tmpl->space().from_json(j);
            INFO(name << " K " << k << " loads " << loads << " stages " << stages << " mma_pipe "
                      << pipe);
            REQUIRE(tmpl->space().is_valid(c));
            Lowered l = lower(*tmpl, c, ir::TargetLimits{});
            REQUIRE(l.ok());
            CHECK((l.source->code.find("cutune_wgmma_wait_group_1()") != std::string::npos) ==
                  (pipe == 1));
            check_config(*tmpl, c, emulator);
          }
        }
      }
    }
  }
  // Loading stages - 1 slices ahead, as without mma_pipe, refills a slot whose wgmmas may
  // still read it: reported for the cp.async ring and the TMA ring alike.
  auto tmpl = make_template("gemm_fp16", {72, 136, 200}, "gemm_fp16_wgmma_nt");
  wg::WgmmaGemmSpec::TestHooks early;
  early.release_in_flight = true;
  for (int loads : {0, 1}) {
    nlohmann::json j = nlohmann::json::parse(knobs(64, 64, 32, 3, 1, 64, 1, 0));
    j["knobs"]["loads"] = loads;
    j["knobs"]["mma_pipe"] = 1;
    Config c = tmpl->space().from_json(j);
    EmulatedCheck r =
        check_source_in_emulator(*tmpl, test::hooked_source(*tmpl, c, early), emulator);
    INFO("loads " << loads << ": " << r.status << ": " << r.message);
    CHECK(r.status == "crashed");
    CHECK_THAT(r.message, Catch::Contains(loads == 0 ? "cp.async: writes shared memory"
                                                     : "TMA load: writes shared memory") &&
                              Catch::Contains("no wgmma.wait_group has completed it yet"));
    check_config(*tmpl, c, emulator);
  }
}

TEST_CASE("several tiles a block run the ring on across their tiles and match",
          "[wgmma][tma][emulator]") {
  // 200 x 136 in 64 x 64 tiles: 4 x 3 = 12 tiles. Two tiles a block: 6 blocks; eight: 2 blocks
  // of 8 tile slots, the second ending 4 short. K = 200: 7 slices a tile, so that a ring of 2
  // to 4 slots wraps within tiles and across them (slot and phase run on from tile to tile).
  emu::Emulator emulator;
  for (const char* name : {"gemm_fp16_wgmma_nn", "gemm_fp16_wgmma_nt"}) {
    auto tmpl = make_template("gemm_fp16", {200, 136, 200}, name);
    for (int tiles : {2, 8}) {
      for (int stages : {2, 4}) {
        for (int pipe : {0, 1}) {
          nlohmann::json j = nlohmann::json::parse(knobs(64, 64, 32, stages, 1, 64, 1, 1));
          j["knobs"]["mma_pipe"] = pipe;
          j["knobs"]["raster_group"] = 4;
          j["knobs"]["tiles_per_block"] = tiles;
          Config c = tmpl->space().from_json(j);
          INFO(name << " tiles a block " << tiles << " stages " << stages << " mma_pipe " << pipe);
          REQUIRE(tmpl->space().is_valid(c));
          Lowered l = lower(*tmpl, c, ir::TargetLimits{});
          REQUIRE(l.ok());
          CHECK(l.verify.launch.grid[0] == (12 + tiles - 1) / tiles);
          check_config(*tmpl, c, emulator);
        }
      }
    }
    // A staged epilogue, or no producer, keeps one tile a block; so does a grid of fewer tiles.
    nlohmann::json j = nlohmann::json::parse(knobs(64, 64, 32, 4, 1, 64, 2, 1));
    j["knobs"]["tiles_per_block"] = 2;
    CHECK_FALSE(tmpl->space().is_valid(tmpl->space().from_json(j)));
    j = nlohmann::json::parse(knobs(64, 64, 32, 4, 1, 64, 1, 0));
    j["knobs"]["tiles_per_block"] = 2;
    CHECK_FALSE(tmpl->space().is_valid(tmpl->space().from_json(j)));
    auto small = make_template("gemm_fp16", {64, 128, 200}, name);
    j = nlohmann::json::parse(knobs(64, 64, 32, 4, 1, 64, 1, 1));
    j["knobs"]["tiles_per_block"] = 4;
    CHECK_FALSE(small->space().is_valid(small->space().from_json(j)));
  }
  // Releasing slots early is reported across tiles too.
  auto tmpl = make_template("gemm_fp16", {200, 136, 200}, "gemm_fp16_wgmma_nt");
  nlohmann::json j = nlohmann::json::parse(knobs(64, 64, 32, 2, 1, 64, 1, 1));
  j["knobs"]["mma_pipe"] = 1;
  j["knobs"]["tiles_per_block"] = 4;
  wg::WgmmaGemmSpec::TestHooks early;
  early.release_in_flight = true;
  EmulatedCheck r = check_source_in_emulator(
      *tmpl, test::hooked_source(*tmpl, tmpl->space().from_json(j), early), emulator);
  INFO(r.status << ": " << r.message);
  CHECK_FALSE(r.passed);
}

TEST_CASE("ping-pong consumers take whole tiles in turn and match", "[wgmma][tma][emulator]") {
  // Two consumer warpgroups, each with a whole tile's accumulators: the block's tile t is
  // warpgroup t % 2's. 200 x 136 x 200 in 64 x 64 tiles (12 tiles, 7 slices each), 2 to 8
  // tiles a block (the last block short), rings of 2 and 4 slots so that the second warpgroup's
  // first slices wrap the ring more than once past the first's; 128 x 64 tiles too (two strips
  // a warpgroup).
  emu::Emulator emulator;
  for (const char* name : {"gemm_fp16_wgmma_nn", "gemm_fp16_wgmma_nt"}) {
    auto tmpl = make_template("gemm_fp16", {200, 136, 200}, name);
    for (int bm : {64, 128}) {
      for (int tiles : {2, 4, 8}) {
        for (int stages : {2, 4}) {
          for (int pipe : {0, 1}) {
            // 128 x 64 tiles: 6 in all; fewer emulator runs.
            if (bm == 128 && (tiles == 8 || stages == 4)) continue;
            nlohmann::json j = nlohmann::json::parse(knobs(bm, 64, 32, stages, 2, 64, 1, 1));
            j["knobs"]["mma_pipe"] = pipe;
            j["knobs"]["raster_group"] = 4;
            j["knobs"]["tiles_per_block"] = tiles;
            j["knobs"]["pingpong"] = 1;
            Config c = tmpl->space().from_json(j);
            INFO(name << " block_m " << bm << " tiles a block " << tiles << " stages " << stages
                      << " mma_pipe " << pipe);
            REQUIRE(tmpl->space().is_valid(c));
            Lowered l = lower(*tmpl, c, ir::TargetLimits{});
            REQUIRE(l.ok());
            CHECK(l.verify.launch.block[0] == 384);
            CHECK(l.source->code.find("mbar_order") != std::string::npos);
            check_config(*tmpl, c, emulator);
          }
        }
      }
    }
  }
  auto tmpl = make_template("gemm_fp16", {200, 136, 200}, "gemm_fp16_wgmma_nt");
  const ConfigSpace& space = tmpl->space();
  nlohmann::json j = nlohmann::json::parse(knobs(64, 64, 32, 2, 2, 64, 1, 1));
  j["knobs"]["tiles_per_block"] = 4;
  j["knobs"]["pingpong"] = 1;
  REQUIRE(space.is_valid(space.from_json(j)));
  // Without the order barrier the second warpgroup waits on its first slices' full barriers
  // while the first warpgroup's fills of the same slots are still coming: a wait on parity
  // (k_tiles / stages) % 2 passes on an earlier fill, and its wgmmas read a slot that TMA is
  // still writing (the emulator reports it, from the wgmma's side or from the copy's,
  // whichever the order of the threads meets first).
  wg::WgmmaGemmSpec::TestHooks unordered;
  unordered.skip_turn_wait = true;
  EmulatedCheck r = check_source_in_emulator(
      *tmpl, test::hooked_source(*tmpl, space.from_json(j), unordered), emulator);
  INFO(r.status << ": " << r.message);
  CHECK_FALSE(r.passed);
  CHECK_THAT(r.message, Catch::Contains("warpgroup 1") &&
                            (Catch::Contains("the wgmma reads") || Catch::Contains("still reads")));
  // Ping-pong needs several tiles a block and two warpgroups; a warpgroup's whole tile within
  // 128 accumulators a thread (128 x 256 is 256).
  j["knobs"]["tiles_per_block"] = 1;
  CHECK(space.violation(space.from_json(j)).value_or("") ==
        "ping-pong consumers need several tiles a block and two warpgroups");
  j["knobs"]["tiles_per_block"] = 2;
  j["knobs"]["warpgroups"] = 1;
  CHECK_FALSE(space.is_valid(space.from_json(j)));
  auto big = make_template("gemm_fp16", {512, 512, 128}, "gemm_fp16_wgmma_nt");
  j = nlohmann::json::parse(knobs(128, 256, 64, 3, 2, 128, 1, 1));
  j["knobs"]["tiles_per_block"] = 2;
  REQUIRE(big->space().is_valid(big->space().from_json(j)));
  j["knobs"]["pingpong"] = 1;
  CHECK(big->space().violation(big->space().from_json(j)).value_or("") ==
        "at most 128 accumulators per thread");
  // 64-row tiles are one strip: a warpgroup of its own with ping-pong, not shared by two.
  j = nlohmann::json::parse(knobs(64, 128, 64, 3, 2, 128, 1, 1));
  j["knobs"]["tiles_per_block"] = 2;
  CHECK_FALSE(big->space().is_valid(big->space().from_json(j)));
  j["knobs"]["pingpong"] = 1;
  CHECK(big->space().is_valid(big->space().from_json(j)));
}
