// GEMMs with a run-time M (TaskParams::runtime_m, template names ending in _dynm), on FMA units
// (gemm_nn_dynm, gemm_nt_dynm) and on wgmma: one kernel, lowered once, runs in the emulator
// with the sanitizer at M = 1, 13, 67 and 130 (its grid, and the sizes and tensor maps of A and
// C, follow M by launch_grid.h's at_m); its code is the same whatever M it is lowered at; the
// wgmma space keeps one tile a block; the names of the exact-shape templates are unchanged and
// a family without a run-time M refuses in one line.
#include <catch2/catch.hpp>

#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/template.h"
#include "src/codegen/launch_grid.h"
#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"
#include "src/measure/template_task.h"
#include "tests/kernels/gemm_samples.h"

using namespace cutune;

TEST_CASE("a run-time-M FMA GEMM lowered once runs at every M", "[gemm][runtime_m][emulator]") {
  emu::Emulator emulator;
  for (const char* name : {"gemm_nn_dynm", "gemm_nt_dynm"}) {
    auto built = make_template("gemm", {64, 45, 33}, name);
    REQUIRE(built->name() == name);
    const std::vector<Config> configs = test::sample_configs(*built, 1, 11);
    REQUIRE(configs.size() == 1);
    const Config& c = configs.front();
    INFO(test::describe(*built, c));
    const Lowered l = lower(*built, c, ir::TargetLimits{});
    REQUIRE(l.ok());
    CHECK(l.source->code.find(", int M") != std::string::npos);
    CHECK(l.source->launch.m_axis == 1);
    const uint32_t bm = l.source->launch.m_rows;
    CHECK(bm == uint32_t(c.get("block_m")));
    CHECK(l.source->launch.grid.y == (64 + bm - 1) / bm);
    for (int64_t m : {1, 13, 67, 130}) {
      INFO("M = " << m);
      auto at = make_template("gemm", {m, 45, 33}, name);
      CHECK(at_m(*l.source, m).launch.grid.y == uint32_t((m + bm - 1) / bm));
      CHECK(lower(*at, c, ir::TargetLimits{}).source->code == l.source->code);
      EmulatedCheck r = check_source_in_emulator(*at, *l.source, emulator);
      INFO("status " << r.status << ": " << r.message << "\nmax rel error " << r.max_rel_error);
      CHECK(r.passed);
    }
  }
}

namespace {

// bm x 64 x 32 tiles, a 3-slot ring with the 64-byte swizzle; `loads` 1: TMA with a producer
// and a TMA store of C (whose tensor map follows M), 0: cp.async and paired stores.
nlohmann::json runtime_m_knobs(int bm, int loads) {
  return nlohmann::json::parse(
      fmt::format(R"({{"knobs":{{"block_m":{},"block_n":64,"block_k":32,"stages":3,"warpgroups":1,)"
                  R"("swizzle":64,"copy_bytes":16,"raster_group":4,"split_k":1,"epilogue":{},)"
                  R"("loads":{},"producer":{},"mma_pipe":1,"tiles_per_block":1,"pingpong":0,)"
                  R"("tma_store":{}}}}})",
                  bm, loads == 1 ? 2 : 1, loads, loads, loads));
}

}  // namespace

TEST_CASE("a run-time-M wgmma GEMM lowered once runs at every M", "[wgmma][runtime_m][emulator]") {
  struct Case {
    const char* op;
    const char* name;
    int loads;
    int split_k;  // > 1: scalar atomics into a zeroed fp32 C (epilogue 0)
  };
  emu::Emulator emulator;
  for (const Case& k : {Case{"gemm_fp16", "gemm_fp16_wgmma_nt_dynm", 0, 1},
                        Case{"gemm_bf16", "gemm_bf16_wgmma_nn_out16_dynm", 1, 1},
                        Case{"gemm_bf16", "gemm_bf16_wgmma_nn_dynm", 0, 2}}) {
    auto built = make_template(k.op, {67, 72, 40}, k.name);
    REQUIRE(built->name() == k.name);
    REQUIRE(built->runtime_m() == 67);
    nlohmann::json knobs = runtime_m_knobs(64, k.loads);
    if (k.split_k > 1) {
      knobs["knobs"]["split_k"] = k.split_k;
      knobs["knobs"]["epilogue"] = 0;
    }
    const Config c = built->space().from_json(knobs);
    INFO(test::describe(*built, c));
    REQUIRE(built->space().violation(c).value_or("") == "");
    const Lowered l = lower(*built, c, ir::TargetLimits{});
    REQUIRE(l.ok());
    // M is the kernel's scalar; the grid is 2 tile rows of 2 tiles at M = 67.
    CHECK(l.source->code.find(", int M") != std::string::npos);
    CHECK(l.source->launch.m_rows == 64);
    CHECK(l.source->launch.m_row_blocks == 2);
    CHECK(l.source->launch.grid.x == 4);
    CHECK(at_m(*l.source, 130).launch.grid.x == 6);
    CHECK(at_m(*l.source, 1).launch.grid.x == 2);
    for (int64_t m : {1, 13, 67, 130}) {
      INFO("M = " << m);
      auto at = make_template(k.op, {m, 72, 40}, k.name);
      // The same code whatever M the kernel is lowered at.
      CHECK(lower(*at, c, ir::TargetLimits{}).source->code == l.source->code);
      EmulatedCheck r = check_source_in_emulator(*at, *l.source, emulator);
      INFO("status " << r.status << ": " << r.message << "\nmax rel error " << r.max_rel_error);
      CHECK(r.passed);
    }
  }
}

TEST_CASE("a run-time M keeps one tile a block and its own template names", "[wgmma][runtime_m]") {
  auto dyn = make_template("gemm_fp16", {67, 72, 40}, "gemm_fp16_wgmma_nt_dynm");
  nlohmann::json j = runtime_m_knobs(64, 1);
  j["knobs"]["tiles_per_block"] = 2;
  CHECK(dyn->space().violation(dyn->space().from_json(j)).value_or("") ==
        "a run-time M takes one tile a block, not persistent, no clusters");
  // The exact-shape template keeps its name, takes no scalar and accepts several tiles.
  auto exact = make_template("gemm_fp16", {67, 72, 40}, "gemm_fp16_wgmma_nt");
  CHECK(exact->name() == "gemm_fp16_wgmma_nt");
  CHECK_FALSE(exact->runtime_m().has_value());
  CHECK(exact->space().is_valid(exact->space().from_json(j)));
  CHECK(template_params("gemm_bf16_wgmma_nn_out16_dynm").runtime_m);
  CHECK_FALSE(template_params("gemm_bf16_wgmma_nn_out16").runtime_m);
  CHECK_THROWS_WITH(make_template("gemm_fp16", {67, 72, 40}, "gemm_fp16_nt_dynm"),
                    "gemm/mma has no run-time M yet");
  CHECK_THROWS_AS(template_params("gemm_fp16_wgmma_nt_dynm_dynm"), TaskError);
}

TEST_CASE("a run-time-M task passes M to the worker after its tensors", "[gemm][runtime_m]") {
  auto tmpl = make_template("gemm", {13, 45, 33}, "gemm_nt_dynm");
  GpuMeasureOptions options;
  std::vector<char> blob;
  const WorkerTask task = worker_task(*tmpl, options, &blob);
  // C, A, B, then M: an int32 scalar whose bytes open the blob (the reference's follow).
  REQUIRE(task.arguments.size() == 4);
  const WorkerArgument& m = task.arguments[3];
  CHECK(m.name == "M");
  CHECK(m.kind == ArgKind::scalar);
  CHECK(m.elem == "int32");
  CHECK(m.init == ArgInit::blob);
  REQUIRE(blob.size() >= 4);
  int32_t value = 0;
  std::memcpy(&value, blob.data(), 4);
  CHECK(value == 13);
  CHECK(int64_t(blob.size()) == task.blob_bytes());
  // The frame the worker reads accepts it.
  const WorkerTask back = task_from_frame(task_frame(task, blob));
  CHECK(back.arguments.size() == 4);
  // The kernel's scalar parameter M takes that argument.
  const Lowered l = lower(*tmpl, test::sample_configs(*tmpl, 1, 11).front(), ir::TargetLimits{});
  REQUIRE(l.ok());
  KernelInstance instance;
  CHECK(bind_kernel_arguments(*l.source, tmpl->tensors(), instance, {}, true) == "");
  CHECK(instance.args == std::vector<int>{0, 1, 2, 3});
  // Without the flag the scalar is not one of the template's tensors.
  CHECK(bind_kernel_arguments(*l.source, tmpl->tensors(), instance) ==
        "kernel parameter 'M' is not one of the template's scalars");
  // The exact-shape task has no such argument.
  auto exact = make_template("gemm", {13, 45, 33}, "gemm_nt");
  CHECK(worker_task(*exact, options, &blob).arguments.size() == 3);
}
