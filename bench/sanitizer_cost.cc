// The emulator's sanitizer (races, bounds, uninitialised shared reads) against the plain
// emulator: host compile and emulated run of the same configurations, each run `runs` times
// with the compiled object cached, the median kept.
//
// usage: sanitizer_cost [runs]   (default 5)
// Kernels: the fp32 GEMM's first reference configuration on 256^3; conv2d_nchw on
// 8x32x28x28 -> 64, 3x3 pad 1 (its first reference configuration); the tensor-core GEMM
// (cp.async, ldmatrix, mma) on 256^3 with a 64x64x32 3-stage configuration.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_cli.h"
#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"
#include "kernels/template.h"

using namespace cutune;

namespace {

struct Case {
  std::string label;
  std::unique_ptr<Template> tmpl;
  Config config;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double compile = 0;
  double run = 0;
  std::string status;
};

Timing time_case(const Case& c, bool sanitize, bool all_blocks, int runs) {
  emu::EmulatorOptions o;
  o.racecheck = sanitize;
  o.memcheck = sanitize;
  o.sanitize_all_blocks = all_blocks;
  emu::Emulator emulator(o);
  Timing t;
  std::vector<double> run_seconds;
  for (int i = 0; i < runs + 1; ++i) {
    EmulatedCheck r = check_in_emulator(*c.tmpl, c.config, ir::TargetLimits{}, emulator, 2e-5);
    t.status = r.passed ? "passed" : r.status + " " + r.message;
    if (i == 0) {
      t.compile = r.compile_seconds;
    } else {
      run_seconds.push_back(r.run_seconds);
    }
  }
  t.run = median(run_seconds);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  CLI::App app{"The emulator's sanitizer against the plain emulator", "sanitizer_cost"};
  app.add_option("RUNS", runs, "runs per configuration (the median is kept)")
      ->check(cutune::bench::positive());
  if (int rc = cutune::bench::parse_command_line(app, argc, argv); rc >= 0) return rc;
  try {
    std::vector<Case> cases;
    {
      auto t = make_template("gemm", {256, 256, 256}, "gemm_nn");
      Config c = t->reference_configs().front();
      cases.push_back({"gemm_nn 256^3 (fp32, reference config)", std::move(t), c});
    }
    {
      auto t = make_template("conv2d", {8, 32, 28, 28, 64, 3, 3, 1, 1}, "conv2d_nchw");
      std::vector<Config> refs = t->reference_configs();
      if (refs.empty()) throw std::runtime_error("conv2d_nchw has no reference configuration here");
      Config c = refs.front();
      cases.push_back({"conv2d_nchw 8x32x28x28 -> 64, 3x3", std::move(t), c});
    }
    {
      auto t = make_template("gemm_fp16", {256, 256, 256}, "gemm_fp16_nn");
      Config c = t->space().from_json(nlohmann::json::parse(
          R"({"knobs":{"block_m":64,"block_n":64,"block_k":32,"warp_m":32,"warp_n":32,)"
          R"("stages":3,"smem_layout":2,"copy_bytes":16,"ldmatrix":1,"raster_group":4,)"
          R"("split_k":1,"epilogue_vec":2}})"));
      cases.push_back({"gemm_fp16_nn 256^3 (cp.async, ldmatrix, mma)", std::move(t), c});
    }
    // "on": the default, a sample of the blocks instrumented; "all": every block.
    fmt::print("{:<46} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7}\n", "kernel", "compile",
               "off", "on", "run", "off", "on", "all", "e2e on");
    for (const Case& c : cases) {
      // Alternated, so that the machine's load changes hit both alike.
      std::vector<Timing> off, on, all;
      for (int round = 0; round < 3; ++round) {
        off.push_back(time_case(c, false, false, runs));
        on.push_back(time_case(c, true, false, runs));
        all.push_back(time_case(c, true, true, runs));
      }
      auto med = [](const std::vector<Timing>& v, double Timing::*f) {
        std::vector<double> x;
        for (const Timing& t : v) x.push_back(t.*f);
        return median(x);
      };
      double c_off = med(off, &Timing::compile), c_on = med(on, &Timing::compile);
      double r_off = med(off, &Timing::run), r_on = med(on, &Timing::run);
      double r_all = med(all, &Timing::run);
      fmt::print(
          "{:<46} {:>9} {:>7.3f} s {:>7.3f} s {:>9} {:>7.3f} s {:>7.3f} s {:>7.3f} s {:>6.2f}x\n",
          c.label, "", c_off, c_on, "", r_off, r_on, r_all, (c_on + r_on) / (c_off + r_off));
      fmt::print("{:<46} {:>9} {:>9} {:>8.2f}x {:>9} {:>9} {:>8.2f}x {:>8.2f}x\n", "  ratios", "",
                 "", c_on / c_off, "", "", r_on / r_off, r_all / r_off);
      for (const auto* v : {&off, &on, &all}) {
        if (v->back().status != "passed") fmt::print("  status: {}\n", v->back().status);
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "sanitizer_cost: {}\n", e.what());
    return 2;
  }
  return 0;
}
