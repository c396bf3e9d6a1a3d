// cutune verify: run sampled configurations in the CPU emulator against the CPU reference.

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "kernels/emulated_check.h"
#include "src/cli/cli_common.h"

namespace cutune::cli {

namespace {

struct VerifyArgs {
  TaskOptions task;
  int sample = 10;
  uint64_t seed = 0;
  std::string config;
  double tolerance = kDefaultTolerance;
  bool no_racecheck = false;
};

void run_verify(const VerifyArgs& args) {
  if (args.sample < 1) throw UsageError("--sample must be >= 1");
  auto tmpl = args.task.make();
  const ConfigSpace& space = tmpl->space();
  ir::TargetLimits limits = args.task.limits();
  std::vector<Config> configs;
  if (!args.config.empty()) {
    configs.push_back(parse_config(space, args.config));
  } else {
    std::mt19937_64 rng(args.seed);
    for (int i = 0; i < args.sample; ++i) {
      std::optional<Config> c = space.sample_valid(rng);
      if (!c) throw UsageError("no valid configuration found in this space for the given shape");
      configs.push_back(*c);
    }
  }
  emu::EmulatorOptions emulator_options;
  emulator_options.racecheck = !args.no_racecheck;
  emu::Emulator emulator(emulator_options);
  nlohmann::json results = nlohmann::json::array();
  int passed = 0, rejected = 0;
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < configs.size(); ++i) {
    EmulatedCheck r = check_in_emulator(*tmpl, configs[i], limits, emulator, args.tolerance);
    passed += r.passed;
    rejected += r.status == "rejected";
    results.push_back({{"config", configs[i].to_json()},
                       {"passed", r.passed},
                       {"status", r.status},
                       {"max_rel_error", std::isfinite(r.max_rel_error)
                                             ? nlohmann::json(r.max_rel_error)
                                             : nlohmann::json(nullptr)},
                       {"message", r.message},
                       {"compile_seconds", r.compile_seconds},
                       {"run_seconds", r.run_seconds}});
    if (!args.task.json) {
      fmt::print("[{}/{}] config {:>10}  {:<13} max rel error {:<10} {}\n", i + 1, configs.size(),
                 configs[i].index(), r.passed ? "passed" : r.status,
                 std::isfinite(r.max_rel_error) ? fmt::format("{:.2e}", r.max_rel_error) : "-",
                 r.message);
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (args.task.json) {
    print_json({{"template", tmpl->name()}, {"shape", tmpl->shape()}, {"tolerance", args.tolerance},
                {"passed", passed}, {"rejected", rejected}, {"total", configs.size()},
                {"seconds", seconds}, {"results", results}});
    return;
  }
  fmt::print("{} of {} passed ({} rejected by the verifier) in {:.1f} s\n", passed,
             configs.size(), rejected, seconds);
}

}  // namespace

void add_verify_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("verify", "run configurations in the CPU emulator against a CPU reference");
  auto args = std::make_shared<VerifyArgs>();
  args->task.add_to(*cmd);
  cmd->add_option("--sample", args->sample, "configurations to sample")->capture_default_str();
  cmd->add_option("--seed", args->seed, "sampling seed")->capture_default_str();
  cmd->add_option("--config", args->config, "check this one configuration (index or JSON)");
  cmd->add_option("--tolerance", args->tolerance, "largest accepted error")->capture_default_str();
  cmd->add_flag("--no-racecheck", args->no_racecheck,
                "skip the emulator's data-race check (bounds and uninitialised reads stay)");
  cmd->callback([args] { run_verify(*args); });
}

}  // namespace cutune::cli
