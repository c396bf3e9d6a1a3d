// Times the CPU emulator on one GEMM configuration: the host compile of the generated source
// (first run) and the run itself (first and cached runs), plus the end-to-end wall time.
//
// usage: core_emulator [M,N,K] [gemm_nn|gemm_nt] [runs]   (default 256,256,256 gemm_nn 3)
// The configuration is the template's first reference configuration (the hand-tuned SGEMM).

#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "bench/bench_cli.h"
#include "src/measure/emulated_check.h"
#include "kernels/template.h"

using namespace cutune;

int main(int argc, char** argv) {
  std::string shape_text = "256,256,256";
  std::string layout = "gemm_nn";
  int runs = 3;
  CLI::App app{"The CPU emulator's cost on one GEMM configuration", "core_emulator"};
  app.add_option("SHAPE", shape_text, "M,N,K");
  app.add_option("LAYOUT", layout, "the GEMM template")
      ->check(CLI::IsMember({"gemm_nn", "gemm_nt"}));
  app.add_option("RUNS", runs, "runs (the first compiles)")->check(cutune::bench::positive());
  if (int rc = cutune::bench::parse_command_line(app, argc, argv); rc >= 0) return rc;
  try {
    auto tmpl = make_template("gemm", parse_shape(shape_text), layout);
    std::vector<Config> refs = tmpl->reference_configs();
    if (refs.empty()) {
      fmt::print(stderr, "core_emulator: no reference configuration is valid for {}\n", shape_text);
      return 2;
    }
    const Config& config = refs.front();
    fmt::print("{} {} reference config {}: {}\n", layout, shape_text, config.index(),
               config.to_string());
    emu::Emulator emulator;
    for (int i = 0; i < runs; ++i) {
      auto start = std::chrono::steady_clock::now();
      EmulatedCheck r = check_in_emulator(*tmpl, config, ir::TargetLimits{}, emulator);
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fmt::print(
          "run {}: {} max rel error {:.2e}; host compile {:.2f} s, emulated run {:.2f} s, "
          "wall {:.2f} s (lowering, inputs, reference included){}\n",
          i + 1, r.passed ? "passed" : r.status, r.max_rel_error, r.compile_seconds, r.run_seconds,
          wall, r.compile_seconds == 0 ? " [compile cached]" : "");
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "core_emulator: {}\n", e.what());
    return 2;
  }
  return 0;
}
