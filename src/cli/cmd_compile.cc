// cutune compile: lower and compile a sample of configurations with NVRTC, reporting the
// verifier's rejections, compile failures and the ptxas outcome (registers, spills); with
// --spec, a user kernel's configurations (cmd_spec.cc).

#include <chrono>
#include <iostream>
#include <map>
#include <random>

#include <fmt/format.h>

#include "src/cli/cli_common.h"
#include "src/cli/cmd_spec.h"
#include "src/lower/lower.h"
#include "src/runtime/device.h"
#include "src/runtime/nvrtc_builder.h"

namespace cutune::cli {

namespace {

struct CompileArgs {
  TaskOptions task;
  int sample = 100;
  int jobs = 1;
  uint64_t seed = 0;
  std::string cache_dir;
  bool sass = false;  // --sass: each compiled configuration's SASS report in the JSON
};

void run_compile(const CompileArgs& args) {
  if (args.sample < 1) throw UsageError("--sample must be >= 1");
  if (args.jobs < 1) throw UsageError("--jobs must be >= 1");
  if (args.sass && !args.task.json) throw UsageError("--sass needs --json");
  if (args.sass) require_disassembler();
  auto tmpl = args.task.make();
  const ConfigSpace& space = tmpl->space();
  ir::TargetLimits limits = args.task.limits();
  DeviceInfo device = target_limits(limits.arch);
  auto start = std::chrono::steady_clock::now();

  std::mt19937_64 rng(args.seed);
  std::vector<Config> configs;
  std::vector<CudaSource> sources;
  std::vector<nlohmann::json> rejected;
  for (int i = 0; i < args.sample; ++i) {
    std::optional<Config> c = space.sample_valid(rng);
    if (!c) throw UsageError("no valid configuration found in this space for the given shape");
    Lowered l = lower(*tmpl, *c, limits);
    if (!l.ok()) {
      rejected.push_back({{"config", c->index()}, {"errors", l.verify.errors}});
      continue;
    }
    configs.push_back(*c);
    sources.push_back(*l.source);
  }

  BuildOptions build;
  build.arch = limits.arch;
  std::optional<std::filesystem::path> cache;
  if (!args.cache_dir.empty()) cache = args.cache_dir;
  NvrtcBuilder builder(build, args.jobs, cache);
  std::vector<CompileResult> results = builder.compile_batch(sources);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  int compiled = 0, failed = 0, spilled = 0, cannot_launch = 0;
  std::vector<double> registers;
  std::map<int, int> register_histogram;
  nlohmann::json failures = nlohmann::json::array();
  nlohmann::json sass = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const CompileResult& r = results[i];
    if (!r.ok()) {
      ++failed;
      failures.push_back({{"config", configs[i].index()}, {"log", r.log.substr(0, 2000)}});
      continue;
    }
    ++compiled;
    if (args.sass) {
      nlohmann::json one = sass_json(r, sources[i].launch);
      one["config"] = configs[i].index();
      sass.push_back(std::move(one));
    }
    if (r.ptxas.parsed) {
      registers.push_back(r.ptxas.registers);
      ++register_histogram[(r.ptxas.registers + 31) / 32 * 32];
      if (r.ptxas.spills()) ++spilled;
      int64_t threads = sources[i].launch.block.volume();
      if (int64_t{r.ptxas.registers} * threads > device.regs_per_block) ++cannot_launch;
    }
  }
  double rate = seconds > 0 ? double(args.sample) / seconds : 0.0;

  if (args.task.json) {
    nlohmann::json hist = nlohmann::json::object();
    for (auto [bucket, n] : register_histogram) hist[fmt::format("<={}", bucket)] = n;
    nlohmann::json out = {{"template", tmpl->name()},
                {"shape", tmpl->shape()},
                {"arch", limits.arch},
                {"sampled", args.sample},
                {"rejected", rejected.size()},
                {"compiled", compiled},
                {"failed", failed},
                {"spilled", spilled},
                {"cannot_launch", cannot_launch},
                {"registers",
                 {{"min", percentile(registers, 0.0)},
                  {"median", percentile(registers, 0.5)},
                  {"max", percentile(registers, 1.0)},
                  {"histogram", hist}}},
                {"seconds", seconds},
                {"jobs", args.jobs},
                {"configs_per_second", rate},
                {"rejections", rejected},
                {"failures", failures}};
    if (args.sass) out["sass"] = std::move(sass);
    print_json(out);
    if (failed > 0) throw ExitStatus{1};
    return;
  }
  fmt::print("{} {} for {}: {} sampled, {} rejected by the verifier, {} compiled, {} failed\n",
             tmpl->name(), args.task.shape, limits.arch, args.sample, rejected.size(), compiled,
             failed);
  if (!registers.empty()) {
    fmt::print(
        "registers: min {:.0f}, median {:.0f}, max {:.0f}; {} spill, {} exceed the "
        "register file at their block size\n",
        percentile(registers, 0.0), percentile(registers, 0.5), percentile(registers, 1.0), spilled,
        cannot_launch);
    for (auto [bucket, n] : register_histogram) {
      fmt::print("  <= {:>3} regs: {:>5} {}\n", bucket, n,
                 std::string(size_t(n * 50 / compiled + 1), '#'));
    }
  }
  for (const auto& f : failures) {
    const std::string log = compile_log_for_people(f["log"]);
    fmt::print("failed config {}: {}\n", f["config"].get<uint64_t>(),
               log.substr(0, log.find('\n')));
  }
  fmt::print("{:.1f} s with {} job(s): {:.2f} configs/s\n", seconds, args.jobs, rate);
  // A configuration the verifier accepted must compile: a failure is a bug scripts must see.
  if (failed > 0) throw ExitStatus{1};
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "compile a sample of configurations with NVRTC");
  auto args = std::make_shared<CompileArgs>();
  auto form = std::make_shared<TaskOrSpec>();
  form->add_to(*cmd);
  cmd->add_option("--sample", args->sample,
                  "configurations to sample (default: 100; with --spec 200, or all valid ones "
                  "when there are no more)");
  cmd->add_option("--jobs,-j", args->jobs, "compiler threads")->capture_default_str();
  add_seed_option(*cmd, args->seed, "sampling seed");
  cmd->add_option("--cache-dir", args->cache_dir, "on-disk cubin cache (default: none)");
  cmd->add_flag("--sass", args->sass,
                "with --json: each compiled configuration's registers, spills and main-loop "
                "instruction mix (needs nvdisasm)");
  cmd->callback([cmd, args, form] {
    if (form->wants_spec({"--cache-dir", "--sass"})) {
      const int sample = cmd->count("--sample") > 0 ? args->sample : 200;
      spec_form::run_compile(form->spec(), sample, args->jobs, args->seed);
      return;
    }
    args->task = form->task;
    run_compile(*args);
  });
}

}  // namespace cutune::cli
