// The FMA GEMM with a run-time M (gemm_nn_dynm, gemm_nt_dynm): one kernel, lowered once at
// M = 67, runs in the emulator with the sanitizer at M = 1, 13, 67 and 130 (its grid's y
// follows M by launch_grid.h's at_m), and its code is the same whatever M it is lowered at.
#include <catch2/catch.hpp>

#include "kernels/template.h"
#include "src/codegen/launch_grid.h"
#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"
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
    CHECK(l.source->code.find(", int M)") != std::string::npos);
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
