// Times the CPU emulator on one GEMM configuration: the host compile of the generated source
// (first run) and the run itself (first and cached runs), plus the end-to-end wall time.
//
// usage: core_emulator [M,N,K] [gemm_nn|gemm_nt] [runs]   (default 256,256,256 gemm_nn 3)
// The configuration is the template's first reference configuration (the hand-tuned SGEMM).

#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "src/measure/emulated_check.h"
#include "kernels/template.h"

using namespace cutune;

int main(int argc, char** argv) {
  // Positional only: a flag (or a fourth argument) would otherwise be read as a shape or
  // silently ignored.
  for (int i = 1; i < argc; ++i) {
    if (argc > 4 || argv[i][0] == '-') {
      std::fprintf(stderr,
                   "core_emulator: unexpected argument '%s' (usage: core_emulator "
                   "[M,N,K] [gemm_nn|gemm_nt] [RUNS])\n",
                   argc > 4 ? argv[4] : argv[i]);
      return 2;
    }
  }
  std::string shape_text = argc > 1 ? argv[1] : "256,256,256";
  std::string layout = argc > 2 ? argv[2] : "gemm_nn";
  int runs = argc > 3 ? std::stoi(argv[3]) : 3;
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
