// Thread-block clusters of the wgmma GEMM (kernels/wgmma_blocks.h: `cluster_m`, `cluster_n`):
// two blocks whose tiles share an operand's slice, each loading half of it by a multicast TMA
// copy into both, the slots' empty barriers counting both blocks' consumers, cluster barriers
// after the mbarrier inits and before the end. In the emulator with the sanitizer on (the
// blocks of a cluster run together: src/emulator/cluster_runner.h), on odd shapes whose tile
// grids are not whole clusters; the planted bugs; the knobs' constraints and indices; the
// launch (__cluster_dims__, whole clusters), the worker protocol and the IR features.

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "cost_model/features.h"
#include "src/codegen/launch_grid.h"
#include "src/ir/ir_operators.h"
#include "src/ir/tma_intrinsics.h"
#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"
#include "src/measure/worker_protocol.h"
#include "tests/tensor_core/wgmma_tma_samples.h"

using namespace cutune;

namespace {

// A cluster configuration with TMA loads and a producer: bm x bn x 32 tiles, a 3-slot ring
// with the 64-byte swizzle, `tiles` tiles a block (or persistent), the TMA store or paired
// stores (scalar ones with `scalar`, for an odd N).
nlohmann::json cluster_knobs(int cm, int cn, int bm, int bn, int warpgroups, int tiles,
                             int tma_store, int persistent = 0, int pingpong = 0,
                             bool scalar = false) {
  return nlohmann::json::parse(fmt::format(
      R"({{"knobs":{{"block_m":{},"block_n":{},"block_k":32,"stages":3,"warpgroups":{},)"
      R"("swizzle":64,"copy_bytes":16,"raster_group":4,"split_k":1,"epilogue":{},)"
      R"("loads":1,"producer":1,"mma_pipe":1,"tiles_per_block":{},"pingpong":{},)"
      R"("persistent":{},"tma_store":{},"cluster_m":{},"cluster_n":{}}}}})",
      bm, bn, warpgroups,
      tma_store > 0 ? 2
      : scalar      ? 0
                    : 1,
      tiles, pingpong, persistent, tma_store, cm, cn));
}

// The last line of `code` that holds `text` (1-based), or 0.
int line_of(const std::string& code, const std::string& text) {
  const size_t at = code.rfind(text);
  if (at == std::string::npos) return 0;
  return 1 + int(std::count(code.begin(), code.begin() + long(at), '\n'));
}

// Whether `message` names, as "on line N", one of the lines of `code` that call `call`.
bool names_a_line_of(const std::string& message, const std::string& code, const std::string& call) {
  int line = 1;
  for (size_t at = 0, end; at < code.size(); at = end + 1, ++line) {
    end = code.find('\n', at);
    if (end == std::string::npos) end = code.size();
    if (code.substr(at, end - at).find(call) != std::string::npos &&
        message.find(fmt::format("on line {} ", line)) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("clusters of two blocks match on odd shapes, 2x1 and 1x2, with and without the TMA store",
          "[wgmma][tma][cluster][emulator]") {
  struct Case {
    const char* op;
    const char* name;
    int64_t m, n, k;
    int cm, cn, bm, bn, warpgroups, tiles, tma_store, persistent, pingpong;
  };
  emu::EmulatorOptions options;
  options.persistent_grid = 4;  // two clusters walking the tiles
  emu::Emulator emulator(options);
  for (const Case& k : {
           // 67 x 45 x 40 (TMA needs 16-byte rows: K, and N for nn, multiples of 8; an odd N
           // scalar stores): 2 x 1 tiles of 64 x 64; where the shape has one tile along the
           // cluster, the second block's tile lies past it (its loads are zeros, its stores
           // clipped or skipped).
           Case{"gemm_fp16", "gemm_fp16_wgmma_nt", 67, 45, 40, 2, 1, 64, 64, 1, 1, 0, 0, 0},
           Case{"gemm_bf16", "gemm_bf16_wgmma_nn_out16", 67, 40, 40, 1, 2, 64, 64, 1, 1, 1, 0, 0},
           Case{"gemm_fp16", "gemm_fp16_wgmma_nt_out16", 45, 72, 40, 2, 1, 64, 64, 1, 1, 1, 0, 0},
           // 200 x 136 x 72: 4 x 3 tiles of 64 x 64 (2 x 3 clusters of 2x1, 4 x 2 of 1x2).
           // Several tiles a block, cooperative and ping-pong consumers, 128-row tiles.
           Case{"gemm_fp16", "gemm_fp16_wgmma_nt_out16", 200, 136, 72, 2, 1, 128, 64, 2, 2, 1, 0,
                0},
           Case{"gemm_bf16", "gemm_bf16_wgmma_nn", 200, 136, 72, 1, 2, 64, 64, 2, 2, 0, 0, 1},
           // Persistent: a cluster walks its cluster tiles as a unit.
           Case{"gemm_fp16", "gemm_fp16_wgmma_nn_out16", 200, 136, 72, 2, 1, 64, 64, 1, 1, 1, 1, 0},
           Case{"gemm_bf16", "gemm_bf16_wgmma_nt", 200, 136, 72, 1, 2, 64, 64, 1, 1, 0, 1, 0},
       }) {
    auto tmpl = make_template(k.op, {k.m, k.n, k.k}, k.name);
    Config c =
        tmpl->space().from_json(cluster_knobs(k.cm, k.cn, k.bm, k.bn, k.warpgroups, k.tiles,
                                              k.tma_store, k.persistent, k.pingpong, k.n % 2 == 1));
    INFO(test::describe(*tmpl, c));
    REQUIRE(tmpl->space().violation(c).value_or("") == "");
    Lowered l = lower(*tmpl, c, ir::TargetLimits{});
    REQUIRE(l.ok());
    const std::string& code = l.source->code;
    CHECK(code.find("__cluster_dims__(2, 1, 1)") != std::string::npos);
    CHECK(code.find("cutune_tma_load_2d_multicast(") != std::string::npos);
    CHECK(code.find("cutune_mbarrier_arrive_cluster(") != std::string::npos);
    CHECK(l.source->launch.cluster_x == 2);
    CHECK(l.source->launch.grid.x % 2 == 0);
    EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator);
    INFO("status " << r.status << ": " << r.message << "\nmax rel error " << r.max_rel_error);
    CHECK(r.passed);
  }
}

TEST_CASE("planted cluster bugs are caught with their class and line",
          "[wgmma][tma][cluster][planted]") {
  emu::Emulator emulator;
  auto tmpl = make_template("gemm_fp16", {200, 136, 72}, "gemm_fp16_wgmma_nt");
  const Config c = tmpl->space().from_json(cluster_knobs(2, 1, 64, 64, 1, 1, 0));
  REQUIRE(tmpl->space().is_valid(c));
  auto run = [&](const wg::WgmmaGemmSpec::TestHooks& hooks, std::string& code) {
    CudaSource src = test::hooked_source(*tmpl, c, hooks);
    code = src.code;
    return check_source_in_emulator(*tmpl, src, emulator);
  };
  std::string code;
  {
    // Each block multicasts its half of B into itself alone: the peer's full barrier waits
    // for bytes that never come.
    wg::WgmmaGemmSpec::TestHooks h;
    h.wrong_cta_mask = true;
    EmulatedCheck r = run(h, code);
    INFO(r.status << ": " << r.message);
    CHECK(r.status == "barrier_divergence");
    CHECK_THAT(r.message, Catch::Contains("mbarrier deadlock"));
    CHECK(names_a_line_of(r.message, code, "cutune_mbarrier_wait_parity("));
  }
  {
    // The first multicast copy or remote arrival reaches a peer whose barriers no cluster
    // barrier has shown initialised.
    wg::WgmmaGemmSpec::TestHooks h;
    h.skip_cluster_init_barrier = true;
    EmulatedCheck r = run(h, code);
    INFO(r.status << ": " << r.message);
    CHECK(r.status == "crashed");
    CHECK_THAT(r.message, Catch::Contains("before a cluster barrier that follows its init") &&
                              Catch::Contains(fmt::format(
                                  "on line {}", line_of(code, "cutune_tma_load_2d_multicast("))));
  }
  {
    // The consumers release a slot to their own producer only: the peer's producer waits
    // for the slot's release forever, once K is long enough for the ring to come round (7
    // slices in 3 slots).
    auto long_k = make_template("gemm_fp16", {200, 136, 200}, "gemm_fp16_wgmma_nt");
    const Config lc = long_k->space().from_json(cluster_knobs(2, 1, 64, 64, 1, 1, 0));
    REQUIRE(long_k->space().is_valid(lc));
    wg::WgmmaGemmSpec::TestHooks h;
    h.skip_remote_arrive = true;
    CudaSource src = test::hooked_source(*long_k, lc, h);
    code = src.code;
    EmulatedCheck r = check_source_in_emulator(*long_k, src, emulator);
    INFO(r.status << ": " << r.message);
    CHECK(r.status == "barrier_divergence");
    CHECK_THAT(r.message, Catch::Contains("mbarrier deadlock"));
    CHECK(names_a_line_of(r.message, code, "cutune_mbarrier_wait_parity("));
  }
  wg::WgmmaGemmSpec::TestHooks none;
  EmulatedCheck r = run(none, code);
  INFO(r.status << ": " << r.message);
  CHECK(r.passed);
}

TEST_CASE("cluster knobs: constraints, the launch and the worker protocol",
          "[wgmma][tma][cluster]") {
  auto tmpl = make_template("gemm_fp16", {200, 136, 72}, "gemm_fp16_wgmma_nt_out16");
  const ConfigSpace& space = tmpl->space();
  nlohmann::json j = cluster_knobs(2, 1, 64, 64, 1, 1, 1);
  REQUIRE(space.is_valid(space.from_json(j)));
  j["knobs"]["cluster_n"] = 2;
  CHECK(space.violation(space.from_json(j)).value_or("") == "a cluster is 2x1 or 1x2");
  j["knobs"]["cluster_n"] = 1;
  j["knobs"]["producer"] = 0;
  j["knobs"]["tiles_per_block"] = 1;
  j["knobs"]["tma_store"] = 0;
  j["knobs"]["epilogue"] = 1;
  CHECK(space.violation(space.from_json(j)).value_or("") ==
        "a cluster needs TMA loads and a producer warpgroup");
  // A 3 x 3 tile grid in 2x1 clusters: 2 x 3 cluster tiles, 12 blocks.
  auto odd = make_template("gemm_fp16", {136, 136, 72}, "gemm_fp16_wgmma_nt_out16");
  Lowered l =
      lower(*odd, odd->space().from_json(cluster_knobs(2, 1, 64, 64, 1, 1, 1)), ir::TargetLimits{});
  REQUIRE(l.ok());
  CHECK(l.source->launch.grid.x == 12);
  CHECK(l.source->launch.cluster_x == 2);
  // The PTX of the cluster intrinsics the kernel uses.
  const std::string& code = l.source->code;
  for (const char* ptx :
       {"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::"
        "cluster",
        "mapa.shared::cluster.u32", "mbarrier.arrive.shared::cluster.b64",
        "barrier.cluster.arrive.release", "barrier.cluster.wait.acquire",
        "fence.mbarrier_init.release.cluster", "%%cluster_ctarank"}) {
    INFO(ptx);
    CHECK(code.find(ptx) != std::string::npos);
  }
  // A multicast to no block is an IR error.
  ir::Buffer smem = ir::Buffer::make("S", ir::Type::f16(), ir::MemoryScope::shared, 64);
  ir::Buffer bar = ir::Buffer::make("bar", ir::Type::i64(), ir::MemoryScope::shared, 1);
  CHECK_THROWS_AS(ir::tma_load_2d_multicast(
                      ir::address_of(smem, ir::i32(0)), ir::tensor_map_ref("m"),
                      ir::address_of(bar, ir::i32(0)), ir::i32(0), ir::i32(0), ir::i32(0)),
                  ir::IRError);
  CHECK(launch_spec_from_json(to_json(l.source->launch)).cluster_x == 2);
  // A persistent grid takes whole clusters.
  LaunchSpec launch = l.source->launch;
  launch.persistent_blocks_per_sm = 1;
  CHECK(launch_grid(launch, 7).x == 6);
  CHECK(launch_grid(launch, 1).x == 2);
  CHECK(with_persistent_grid(launch, 5).grid.x == 4);
}

TEST_CASE("the cluster knobs keep every earlier configuration's index", "[wgmma][tma][cluster]") {
  // Defined last with default 1 (choice 0): a configuration without clusters has the index
  // it had before them.
  auto tmpl = make_template("gemm_fp16", {4096, 4096, 4096}, "gemm_fp16_wgmma_nn");
  const std::vector<Knob>& knobs = tmpl->space().knobs();
  REQUIRE(knobs.size() >= 2);
  CHECK(knobs[knobs.size() - 2].name() == "cluster_m");
  CHECK(knobs.back().name() == "cluster_n");
  uint64_t before = 1;
  for (size_t i = 0; i + 2 < knobs.size(); ++i) before *= uint64_t(knobs[i].cardinality());
  for (const Config& c : tmpl->reference_configs()) {
    const bool clustered = c.get("cluster_m") != 1 || c.get("cluster_n") != 1;
    CHECK((c.index() >= before) == clustered);
  }
}

TEST_CASE("clusters are visible to the IR features: the cluster and the L2 bytes it saves",
          "[wgmma][tma][cluster][features]") {
  // 128 x 256 x 64 slices: a block reads A's 128 rows and B's 256 rows of 64 elements; in a
  // 2x1 cluster it reads B's half (the peer the other), so its TMA bytes are 2/3.
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
  nlohmann::json j = cluster_knobs(2, 1, 128, 256, 2, 1, 0);
  j["knobs"]["block_k"] = 64;
  j["knobs"]["swizzle"] = 128;
  const Config cluster = tmpl->space().from_json(j);
  REQUIRE(tmpl->space().is_valid(cluster));
  j["knobs"]["cluster_m"] = 1;
  const Config plain = tmpl->space().from_json(j);
  CHECK(value(cluster, "kernel.cluster_size") == 2);
  CHECK(value(plain, "kernel.cluster_size") == 1);
  const double bytes = std::exp2(value(cluster, "kernel.tma_copy_bytes")) - 1;
  const double plain_bytes = std::exp2(value(plain, "kernel.tma_copy_bytes")) - 1;
  CHECK(bytes / plain_bytes == Approx(2.0 / 3).epsilon(1e-3));
}
