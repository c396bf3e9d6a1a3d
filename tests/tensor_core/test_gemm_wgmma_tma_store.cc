// The wgmma GEMM's TMA-store epilogue (tma_store = 1, wgmma_blocks.h): the consumers write
// the tile into a shared C tile, fence it for the async proxy, meet at a named barrier and one
// elected thread stores it by cp.async.bulk.tensor. In the emulator with the sanitizer, on odd
// shapes whose tails TMA clips: fp32 and 16-bit C, fp16 and bf16 inputs, nn and nt, one tile
// a block (with and without a producer) and several (cooperative and ping-pong consumers); and
// the bugs planted through WgmmaGemmSpec::hooks are reported with their class and line.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"
#include "tests/tensor_core/wgmma_tma_samples.h"

using namespace cutune;

namespace {

// A TMA-store configuration: bm x bn x 32 tiles, a 3-slot ring with the 64-byte swizzle, the
// whole tile stored at once (mode 1) or a column at a time (2).
nlohmann::json store_knobs(int bm, int bn, int warpgroups, int producer, int tiles, int pingpong,
                           int mode = 1) {
  nlohmann::json j = nlohmann::json::parse(fmt::format(
      R"({{"knobs":{{"block_m":{},"block_n":{},"block_k":32,"stages":3,"warpgroups":{},)"
      R"("swizzle":64,"copy_bytes":16,"raster_group":4,"split_k":1,"epilogue":2,)"
      R"("loads":1,"producer":{},"mma_pipe":1,"tiles_per_block":{},"pingpong":{},)"
      R"("tma_store":{}}}}})",
      bm, bn, warpgroups, producer, tiles, pingpong, mode));
  return j;
}

// The last line of `code` that holds `text` (1-based; the kernel's call, after the
// intrinsic's definition), or 0.
int line_of(const std::string& code, const std::string& text) {
  const size_t at = code.rfind(text);
  if (at == std::string::npos) return 0;
  return 1 + int(std::count(code.begin(), code.begin() + long(at), '\n'));
}

}  // namespace

TEST_CASE("the TMA-store epilogue matches on odd shapes, one tile a block and several",
          "[wgmma][tma][emulator]") {
  // 200 x 136 x 72: 64 x 64 tiles leave 8 rows and 8 columns in the last ones, which the
  // stores clip; 4 x 3 = 12 tiles.
  struct Case {
    const char* op;
    const char* name;
    int bm, bn, warpgroups, producer, tiles, pingpong, mode;
  };
  emu::Emulator emulator;
  for (const Case& k : {
           Case{"gemm_fp16", "gemm_fp16_wgmma_nt", 64, 64, 1, 0, 1, 0, 1},  // no producer
           Case{"gemm_bf16", "gemm_bf16_wgmma_nn_out16", 64, 64, 1, 1, 1, 0, 1},  // a producer
           Case{"gemm_fp16", "gemm_fp16_wgmma_nt_out16", 128, 64, 2, 1, 4, 0, 1},  // cooperative
           Case{"gemm_bf16", "gemm_bf16_wgmma_nn", 128, 64, 2, 1, 2, 0, 1},
           Case{"gemm_fp16", "gemm_fp16_wgmma_nn", 64, 64, 2, 1, 4, 1, 1},  // ping-pong
           Case{"gemm_bf16", "gemm_bf16_wgmma_nt_out16", 64, 64, 2, 1, 8, 1, 1},
           // A column at a time through two buffers: 4 fp32 or 2 16-bit columns a tile.
           Case{"gemm_fp16", "gemm_fp16_wgmma_nn", 128, 128, 2, 1, 1, 0, 2},
           Case{"gemm_bf16", "gemm_bf16_wgmma_nt_out16", 128, 128, 2, 1, 2, 0, 2},
           Case{"gemm_fp16", "gemm_fp16_wgmma_nt", 64, 128, 2, 1, 4, 1, 2},
           // An odd number of columns (3 fp32, 1 16-bit): a tile's first column takes the
           // buffer of the previous tile's last.
           Case{"gemm_bf16", "gemm_bf16_wgmma_nn", 64, 96, 1, 1, 4, 0, 2},
           Case{"gemm_fp16", "gemm_fp16_wgmma_nn_out16", 64, 64, 2, 1, 4, 1, 2},
       }) {
    auto tmpl = make_template(k.op, {200, 136, 72}, k.name);
    Config c = tmpl->space().from_json(
        store_knobs(k.bm, k.bn, k.warpgroups, k.producer, k.tiles, k.pingpong, k.mode));
    INFO(test::describe(*tmpl, c));
    REQUIRE(tmpl->space().violation(c).value_or("") == "");
    Lowered l = lower(*tmpl, c, ir::TargetLimits{});
    REQUIRE(l.ok());
    const std::string& code = l.source->code;
    CHECK(code.find("cutune_tma_store_2d(") != std::string::npos);
    CHECK(code.find("cutune_named_barrier_sync(") != std::string::npos);
    CHECK(code.find("cutune_bulk_wait_group_read_") != std::string::npos);
    EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator);
    INFO("status " << r.status << ": " << r.message << "\nmax rel error " << r.max_rel_error);
    CHECK(r.passed);
  }
}

TEST_CASE(
    "the TMA store's constraints: staged epilogue, 16-byte C rows, 128-byte columns, "
    "shared memory",
    "[wgmma][tma]") {
  auto tmpl = make_template("gemm_fp16", {200, 136, 72}, "gemm_fp16_wgmma_nt_out16");
  const ConfigSpace& space = tmpl->space();
  nlohmann::json j = store_knobs(64, 64, 1, 1, 2, 0);
  REQUIRE(space.is_valid(space.from_json(j)));
  j["knobs"]["epilogue"] = 1;
  CHECK(space.violation(space.from_json(j)).value_or("") ==
        "a TMA store takes the staged epilogue (2) and TMA loads");
  // 96 16-bit columns are one and a half 128-byte columns.
  j["knobs"]["epilogue"] = 2;
  j["knobs"]["block_n"] = 96;
  CHECK(space.violation(space.from_json(j)).value_or("") ==
        "a TMA store needs 16-byte global rows of C and whole 128-byte columns");
  // N = 140 16-bit elements: rows of 280 bytes.
  auto odd = make_template("gemm_fp16", {200, 140, 72}, "gemm_fp16_wgmma_nt_out16");
  j["knobs"]["block_n"] = 64;
  CHECK(odd->space().violation(odd->space().from_json(j)).value_or("") ==
        "a TMA store needs 16-byte global rows of C and whole 128-byte columns");
  // 128 x 256 with a 4-slot ring of 64-wide slices (192 KiB) has no room for its 64 KiB C
  // tile; with 3 slots it has.
  auto big = make_template("gemm_fp16", {4096, 4096, 4096}, "gemm_fp16_wgmma_nt_out16");
  j = store_knobs(128, 256, 2, 1, 8, 0);
  j["knobs"]["block_k"] = 64;
  j["knobs"]["swizzle"] = 128;
  j["knobs"]["stages"] = 4;
  CHECK(big->space().violation(big->space().from_json(j)).value_or("") ==
        "shared memory with the TMA store's C tiles within the opt-in limit");
  j["knobs"]["stages"] = 3;
  CHECK(big->space().is_valid(big->space().from_json(j)));
  // The references: the large tile, several tiles a block or persistent tiles (the latter
  // also in 2x1 clusters), a TMA store of the whole tile (of two columns' buffers for fp32 C,
  // whose whole tile does not fit).
  auto fp32 = make_template("gemm_fp16", {4096, 4096, 4096}, "gemm_fp16_wgmma_nt");
  for (const Template* t : {big.get(), fp32.get()}) {
    int found = 0;
    for (const Config& c : t->reference_configs()) {
      if (c.get("tma_store") == 0) continue;
      ++found;
      CHECK(c.get("tma_store") == (t == big.get() ? 1 : 2));
      CHECK(c.get("block_n") == 256);
      // Several tiles a block by the knob, or persistent tiles.
      CHECK(c.get("tiles_per_block") == (c.get("persistent") == 1 ? 1 : 8));
      CHECK(c.get("producer") == 1);
    }
    CHECK(found == 3);
  }
  // Two columns' buffers (32 KiB) fit beside the 4-slot ring where the fp32 tile does not.
  j["knobs"]["stages"] = 4;
  j["knobs"]["tma_store"] = 2;
  CHECK(fp32->space().is_valid(fp32->space().from_json(j)));
  j["knobs"]["tma_store"] = 1;
  j["knobs"]["stages"] = 3;
  CHECK(fp32->space().violation(fp32->space().from_json(j)).value_or("") ==
        "shared memory with the TMA store's C tiles within the opt-in limit");
}

TEST_CASE("planted TMA-store bugs are caught with their class and line", "[wgmma][tma][planted]") {
  emu::Emulator emulator;
  auto tmpl = make_template("gemm_fp16", {200, 136, 72}, "gemm_fp16_wgmma_nt_out16");
  // Cooperative consumers, 4 tiles a block: the store of one tile and the next tile's writes.
  const Config c = tmpl->space().from_json(store_knobs(128, 64, 2, 1, 4, 0));
  REQUIRE(tmpl->space().is_valid(c));
  auto run = [&](const wg::WgmmaGemmSpec::TestHooks& hooks, std::string& code) {
    CudaSource src = test::hooked_source(*tmpl, c, hooks);
    code = src.code;
    return check_source_in_emulator(*tmpl, src, emulator);
  };
  std::string code;
  {
    // The next tile's writes while the store of the previous one may still read the tile.
    wg::WgmmaGemmSpec::TestHooks h;
    h.skip_store_read_wait = true;
    EmulatedCheck r = run(h, code);
    INFO(r.status << ": " << r.message);
    const int store = line_of(code, "cutune_tma_store_2d(");
    REQUIRE(store > 0);
    CHECK(r.status == "race");
    CHECK_THAT(r.message, Catch::Contains("data race on shared cutune_smem[") &&
                              Catch::Contains(fmt::format("TMA store on line {}", store)) &&
                              Catch::Contains("cp.async.bulk.wait_group.read"));
  }
  {
    // The store reads bytes its writers have not fenced for the async proxy.
    wg::WgmmaGemmSpec::TestHooks h;
    h.skip_store_fence = true;
    EmulatedCheck r = run(h, code);
    INFO(r.status << ": " << r.message);
    const int store = line_of(code, "cutune_tma_store_2d(");
    CHECK(r.status == "race");
    CHECK_THAT(r.message, Catch::Contains("proxy race on shared cutune_smem[") &&
                              Catch::Contains(fmt::format("at line {}", store)) &&
                              Catch::Contains("no fence.proxy.async"));
  }
  {
    // The elected thread stores the tile while the other consumers have not written theirs.
    wg::WgmmaGemmSpec::TestHooks h;
    h.skip_store_barrier = true;
    EmulatedCheck r = run(h, code);
    INFO(r.status << ": " << r.message);
    const int store = line_of(code, "cutune_tma_store_2d(");
    CHECK(r.status == "race");
    CHECK_THAT(r.message, Catch::Contains("data race on shared cutune_smem[") &&
                              Catch::Contains("read by thread") &&
                              Catch::Contains(fmt::format("at line {}, and written", store)));
  }
  // Without a bug the same configuration passes.
  wg::WgmmaGemmSpec::TestHooks none;
  EmulatedCheck r = run(none, code);
  INFO(r.status << ": " << r.message);
  CHECK(r.passed);
  // A column at a time through two buffers: without the wait_group.read 1, the next tile's
  // first column overwrites the buffer whose store may still read it.
  const Config columns = tmpl->space().from_json(store_knobs(128, 128, 2, 1, 2, 0, 2));
  REQUIRE(tmpl->space().is_valid(columns));
  wg::WgmmaGemmSpec::TestHooks h;
  h.skip_store_read_wait = true;
  CudaSource src = test::hooked_source(*tmpl, columns, h);
  r = check_source_in_emulator(*tmpl, src, emulator);
  INFO(r.status << ": " << r.message);
  CHECK(r.status == "race");
  CHECK_THAT(r.message,
             Catch::Contains(fmt::format("TMA store on line {}",
                                         line_of(src.code, "cutune_tma_store_2d("))) &&
                 Catch::Contains("cp.async.bulk.wait_group.read"));
}
