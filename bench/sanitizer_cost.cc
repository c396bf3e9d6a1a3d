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

#include "kernels/emulated_check.h"
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

Timing time_case(const Case& c, bool sanitize, int runs) {
  emu::EmulatorOptions o;
  o.racecheck = sanitize;
  o.memcheck = sanitize;
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
  int runs = argc > 1 ? std::stoi(argv[1]) : 5;
  if (runs < 1) {
    fmt::print(stderr, "sanitizer_cost: runs must be >= 1\n");
    return 2;
  }
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
    fmt::print("{:<48} {:>12} {:>12} {:>9} {:>12} {:>12} {:>9}\n", "kernel", "compile off",
               "compile on", "ratio", "run off", "run on", "ratio");
    for (const Case& c : cases) {
      Timing off = time_case(c, false, runs);
      Timing on = time_case(c, true, runs);
      fmt::print("{:<48} {:>10.3f} s {:>10.3f} s {:>8.2f}x {:>10.3f} s {:>10.3f} s {:>8.2f}x\n",
                 c.label, off.compile, on.compile, on.compile / off.compile, off.run, on.run,
                 on.run / off.run);
      if (off.status != "passed" || on.status != "passed") {
        fmt::print("  status: off {}, on {}\n", off.status, on.status);
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "sanitizer_cost: {}\n", e.what());
    return 2;
  }
  return 0;
}
