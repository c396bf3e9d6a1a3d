// cutune verify: run sampled configurations in the CPU emulator against the CPU reference.
// Scripts can trust its exit code: 0 only when every configuration passed, 1 when any failed,
// crashed, raced, timed out or was rejected by the verifier, 2 for bad input. With --spec, a
// user kernel's configurations against its reference configuration (cmd_spec.cc).

#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "src/cli/cli_common.h"
#include "src/cli/cmd_spec.h"
#include "src/measure/correctness.h"
#include "src/measure/emulated_check.h"
#include "src/measure/emulated_verify.h"

namespace cutune::cli {

namespace {

// Past these the emulator would take minutes per configuration (it runs ~1e8-1e9 flops/s on
// one core) or exhaust memory: refuse, or shrink where the user asks.
constexpr double kMaxEmulatedFlops = 8e9;
constexpr double kMaxEmulatedBytes = 1.0 * (1 << 30);

struct VerifyArgs {
  TaskOptions task;
  int sample = 10;
  uint64_t seed = 0;
  std::string config;
  std::string tolerance = "dtype";
  bool shrink = false;
  bool no_racecheck = false;
  bool all_blocks = false;
  bool strict = false;
};

// The tolerance asked for, or by the correctness rule from the output's dtype and the
// reduction length; with the words that say which.
std::pair<double, std::string> tolerance_for(const Template& tmpl, const std::string& text) {
  if (text != "dtype") {
    double t = 0;
    size_t used = 0;
    try {
      t = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || !std::isfinite(t) || t < 0) {
      throw UsageError(
          fmt::format("--tolerance '{}': expected a finite number >= 0, or 'dtype'", text));
    }
    return {t, "given"};
  }
  std::string dtype = "float32";
  for (const TensorSpec& t : tmpl.tensors()) {
    if (t.is_output) dtype = storage_dtype(t.type.dtype);
  }
  return {
      error_tolerance(dtype, tmpl.reduction_length()),
      fmt::format("by output dtype {} and reduction length {}", dtype, tmpl.reduction_length())};
}

double tensor_bytes(const Template& tmpl) {
  double bytes = 0;
  for (const TensorSpec& t : tmpl.tensors()) bytes += double(t.elements) * t.type.bytes();
  return bytes;
}

bool too_large(const Template& tmpl) {
  return tmpl.flops() > kMaxEmulatedFlops || tensor_bytes(tmpl) > kMaxEmulatedBytes;
}

// GEMM sizes above 512 become 256 + (size mod 256): every block size of the GEMM templates
// divides 256, so every configuration keeps its tails (size mod block) in every dimension.
std::string shrunk_gemm_shape(const std::vector<int64_t>& shape) {
  std::string out;
  for (int64_t d : shape) {
    out += (out.empty() ? "" : ",") + std::to_string(d > 512 ? 256 + d % 256 : d);
  }
  return out;
}

void run_verify(const VerifyArgs& args) {
  if (args.sample < 1) throw UsageError(fmt::format("--sample must be >= 1 (got {})", args.sample));
  auto tmpl = args.task.make();
  if (too_large(*tmpl)) {
    const std::string why = fmt::format(
        "{} {} is too large to emulate ({:.3g} GFLOP, {:.3g} MiB of tensors; the limits are "
        "{:.3g} GFLOP and {:.3g} MiB)",
        tmpl->name(), args.task.shape, tmpl->flops() * 1e-9, tensor_bytes(*tmpl) / (1 << 20),
        kMaxEmulatedFlops * 1e-9, kMaxEmulatedBytes / (1 << 20));
    const bool gemm = tmpl->op().starts_with("gemm");
    if (!args.shrink) {
      throw UsageError(why + (gemm ? "; --shrink checks a smaller shape with the same tails"
                                   : "; give a smaller --shape"));
    }
    if (!gemm) throw UsageError(why + "; --shrink knows GEMM shapes only: give a smaller --shape");
    if (!args.config.empty()) {
      throw UsageError(why +
                       "; --shrink cannot keep a --config (its space changes with the shape)");
    }
    TaskOptions small = args.task;
    small.shape = shrunk_gemm_shape(tmpl->shape());
    fmt::print(stderr,
               "cutune: {} is too large to emulate; checking --shape {} instead (same "
               "tails modulo 256)\n",
               args.task.shape, small.shape);
    tmpl = small.make();
  }
  const auto [tolerance, tolerance_source] = tolerance_for(*tmpl, args.tolerance);
  const ConfigSpace& space = tmpl->space();
  ir::TargetLimits limits = args.task.limits();
  std::vector<Config> configs;
  if (!args.config.empty()) {
    Config c = parse_config(space, args.config);
    if (std::optional<std::string> why = space.violation(c)) {
      throw UsageError(fmt::format("--config violates a constraint of {}: {}", tmpl->name(), *why));
    }
    configs.push_back(c);
  } else {
    std::mt19937_64 rng(args.seed);
    for (int i = 0; i < args.sample; ++i) {
      std::optional<Config> c = space.sample_valid(rng);
      if (!c) throw UsageError("no valid configuration found in this space for the given shape");
      configs.push_back(*c);
    }
  }
  if (!args.task.json) {
    fmt::print("tolerance {:.3g} ({})\n", tolerance, tolerance_source);
  }
  emu::Emulator emulator(
      verify_emulator_options({!args.no_racecheck, args.all_blocks, args.strict}));
  VerifyReport report(configs.size());
  auto start = std::chrono::steady_clock::now();
  for (const Config& config : configs) {
    const std::string line =
        report.add(config, check_in_emulator(*tmpl, config, limits, emulator, tolerance));
    if (!args.task.json) fmt::print("{}\n", line);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (args.task.json) {
    print_json({{"template", tmpl->name()},
                {"shape", tmpl->shape()},
                {"tolerance", tolerance},
                {"tolerance_source", tolerance_source},
                {"passed", report.passed()},
                {"rejected", report.rejected()},
                {"total", configs.size()},
                {"seconds", seconds},
                {"results", report.results()}});
  } else {
    fmt::print("{}\n", report.summary(seconds, "by the verifier"));
  }
  if (!report.all_passed()) throw ExitStatus{1};
}

}  // namespace

void add_verify_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "verify",
      "run configurations in the CPU emulator against a CPU reference; exit 1 unless "
      "all pass");
  auto args = std::make_shared<VerifyArgs>();
  auto form = std::make_shared<TaskOrSpec>();
  form->add_to(*cmd);
  cmd->add_option("--sample", args->sample,
                  "configurations to sample (default: 10; with --spec 20, or all valid ones when "
                  "there are no more)");
  add_seed_option(*cmd, args->seed, "sampling seed");
  cmd->add_option("--config", args->config, "check this one configuration (index or JSON)");
  cmd->add_option("--tolerance", args->tolerance,
                  "largest accepted relative error, or 'dtype': by the output's dtype and the "
                  "reduction length (the correctness rule of measuring)")
      ->capture_default_str();
  cmd->add_flag("--shrink", args->shrink,
                "a GEMM too large to emulate is checked at a smaller shape with the same tails");
  cmd->add_flag("--no-racecheck", args->no_racecheck, kNoRacecheckHelp);
  cmd->add_flag("--all-blocks", args->all_blocks, kAllBlocksHelp);
  cmd->add_flag("--strict", args->strict, kStrictHelp);
  cmd->callback([cmd, args, form] {
    if (form->wants_spec({"--tolerance", "--shrink"})) {
      const int sample = cmd->count("--sample") > 0 ? args->sample : 20;
      spec_form::run_verify(form->spec(), sample, args->seed, args->config,
                            {!args->no_racecheck, args->all_blocks, args->strict});
      return;
    }
    args->task = form->task;
    run_verify(*args);
  });
}

}  // namespace cutune::cli
