// `cutune export --table` without a GPU: a dispatch table of two wgmma kernels of run-time M
// (as `tune --shape M=lo..hi,N,K --table` writes it) becomes two cubins and a manifest whose
// "dispatch" the header-only loader reads: it picks the listed kernel at the intervals' edges
// and sizes the grid, the buffers and the tensor maps for the M it launches with.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "kernels/template.h"
#include "src/codegen/launch_grid.h"
#include "src/export/cubin_loader.h"
#include "src/export/export_table.h"
#include "src/lower/lower.h"

using namespace cutune;

namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cutune_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// 64 x 64 tiles by cp.async (one warpgroup), or 128 x 64 by TMA with a producer and a TMA store.
nlohmann::json knobs(int bm, int loads) {
  return nlohmann::json::parse(
      fmt::format(R"({{"block_m":{},"block_n":64,"block_k":32,"stages":3,"warpgroups":{},)"
                  R"("swizzle":64,"copy_bytes":16,"raster_group":4,"split_k":1,"epilogue":{},)"
                  R"("loads":{},"producer":{},"mma_pipe":1,"tiles_per_block":1,"pingpong":0,)"
                  R"("tma_store":{}}})",
                  bm, bm / 64, loads == 1 ? 2 : 1, loads, loads, loads));
}

}  // namespace

TEST_CASE("a dispatch table round-trips through export and the loader picks by M",
          "[export][runtime_m]") {
  const auto dir = fresh_dir("export_table");
  const std::string name = "gemm_fp16_wgmma_nt_dynm";
  const nlohmann::json table = {
      {"op", "gemm_fp16"},
      {"template", name},
      {"arch", "sm_90"},
      {"device", "NVIDIA H100"},
      {"n", 256},
      {"k", 128},
      {"table",
       {{{"m_lo", 1}, {"m_hi", 95}, {"m_tuned", 1}, {"time_ms", 0.01}, {"knobs", knobs(64, 0)}},
        {{"m_lo", 96},
         {"m_hi", 4096},
         {"m_tuned", 96},
         {"time_ms", 0.02},
         {"knobs", knobs(128, 1)}}}}};
  {
    std::ofstream out(dir / "table.json");
    out << table.dump();
  }
  const ExportSummary s = export_table(dir / "table.json", dir / "out");
  REQUIRE(s.written.size() == 2);
  const std::string out = (dir / "out").string();
  const cutune_loader::DispatchTable d = cutune_loader::read_dispatch(out);
  CHECK(d.template_name == name);
  CHECK(d.n == 256);
  CHECK(d.k == 128);
  REQUIRE(d.entries.size() == 2);
  CHECK(d.entries[0].kernel == s.written[0]);
  CHECK(d.entries[1].kernel == s.written[1]);
  // The edges: 1 and 95 the first kernel's, 96 and 4096 the second's; outside, an error.
  CHECK(d.pick(1).kernel == s.written[0]);
  CHECK(d.pick(95).kernel == s.written[0]);
  CHECK(d.pick(96).kernel == s.written[1]);
  CHECK(d.pick(4096).kernel == s.written[1]);
  CHECK_THROWS_WITH(d.pick(4097), "M = 4097 is outside the dispatch table's 1..4096");
  CHECK_THROWS(d.pick(0));

  const std::vector<cutune_loader::KernelManifest> kernels = cutune_loader::read_manifest(out);
  REQUIRE(kernels.size() == 2);
  for (const cutune_loader::KernelManifest& k : kernels) {
    INFO(k.name);
    CHECK(std::filesystem::exists(dir / "out" / k.cubin));
    CHECK(k.m_rows == uint32_t(k.raw["config"]["knobs"]["block_m"].get<int>()));
    CHECK(k.m_row_blocks == 4);  // 256 / 64 tiles along N
    CHECK(k.m_axis == 0);
    // The loader's rule and cutune's (launch_grid.h) agree at every M, the edges included.
    auto tmpl =
        make_template("gemm_fp16", {k.raw["task"]["shape"][0].get<int64_t>(), 256, 128}, name);
    const Lowered l = lower(*tmpl, tmpl->space().from_json({{"knobs", k.raw["config"]["knobs"]}}),
                            ir::TargetLimits{});
    REQUIRE(l.ok());
    for (int64_t m : {1, 95, 96, 130, 4096}) {
      INFO("M = " << m);
      const cutune_loader::KernelManifest at = cutune_loader::at_m(k, m);
      const CudaSource src = at_m(*l.source, m);
      CHECK(at.grid[0] == src.launch.grid.x);
      for (size_t i = 0; i < at.params.size(); ++i) {
        const cutune_loader::Param& p = at.params[i];
        if (p.is_tensor_map) {
          CHECK(p.tensor_map.dims[1] == uint64_t(src.params[i].tensor_map->dims[1]));
          if (p.tensor_map.buffer != "B") CHECK(p.tensor_map.dims[1] == uint64_t(m));
        } else if (p.pointer) {
          CHECK(p.elements == src.params[i].elements);
          CHECK(p.bytes == p.elements * 2 * (p.name == "C" ? 2 : 1));
        }
      }
      CHECK(at.params[0].elements == m * 256);  // C, fp32
    }
    // Its scalar "M" is an int32 parameter after the buffers.
    const auto scalar = std::find_if(k.params.begin(), k.params.end(),
                                     [](const cutune_loader::Param& p) { return p.name == "M"; });
    REQUIRE(scalar != k.params.end());
    CHECK(scalar->type == "int32");
    CHECK_FALSE(scalar->pointer);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a table whose template has no run-time M is refused", "[export][runtime_m]") {
  const auto dir = fresh_dir("export_table_bad");
  {
    std::ofstream out(dir / "table.json");
    out << R"({"op":"gemm_fp16","template":"gemm_fp16_wgmma_nt","arch":"sm_90","n":64,"k":64,)"
           R"("table":[{"m_lo":1,"m_hi":8,"m_tuned":1,"knobs":{}}]})";
  }
  CHECK_THROWS_WITH(export_table(dir / "table.json", dir / "out"),
                    Catch::Contains("has no run-time M"));
  {
    std::ofstream out(dir / "table.json");
    out << R"({"op":"gemm_fp16"})";
  }
  CHECK_THROWS_WITH(export_table(dir / "table.json", dir / "out"),
                    Catch::Contains("not a dispatch table"));
  std::filesystem::remove_all(dir);
}
