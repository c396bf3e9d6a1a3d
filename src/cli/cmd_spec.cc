// `--spec SPEC.json` on space / show / compile / verify / bench / export: the same commands for
// a user's own CUDA kernel described by a T1 file (src/spec). Those commands register --spec
// themselves (TaskOrSpec) and call spec_form:: here for it (`export --t4` and `cache` are
// cmd_interop.cc's).

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>

#include "src/cli/cli_common.h"
#include "src/cli/cmd_spec.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/records/tuning_log.h"
#include "src/spec/spec_export.h"
#include "src/measure/emulated_verify.h"
#include "src/measure/worker_process.h"
#include "src/measure/gpu_measurer.h"
#include "src/spec/spec_kernel_task.h"
#include "src/spec/spec_verify.h"

namespace cutune::cli {

namespace {

// `count` distinct valid configurations: all of them when there are no more, else a sample.
std::vector<Config> pick_configs(const ConfigSpace& space, int count, uint64_t seed) {
  std::vector<Config> out;
  std::optional<uint64_t> valid = space.count_valid(2'000'000);
  if (valid && *valid <= static_cast<uint64_t>(count)) {
    for (uint64_t i = 0; i < space.size(); ++i) {
      Config c = space.get(i);
      if (space.is_valid(c)) out.push_back(c);
    }
    return out;
  }
  std::mt19937_64 rng(seed);
  std::set<uint64_t> seen;
  for (int misses = 0; static_cast<int>(out.size()) < count && misses < 100 * count;) {
    std::optional<Config> c = space.sample_valid(rng);
    if (!c) break;
    if (!seen.insert(c->index()).second) {
      ++misses;
      continue;
    }
    out.push_back(*c);
  }
  if (out.empty()) throw UsageError("the spec's space has no valid configuration");
  return out;
}

}  // namespace

spec::KernelSpec SpecOptions::load(bool require_kernel_file) const {
  spec::KernelSpec s = spec::load_kernel_spec(spec_path, require_kernel_file);
  if (!problem_size.empty()) {
    std::vector<int64_t> sizes = parse_shape(problem_size);
    if (sizes.size() != s.problem_size.size())
      throw UsageError(fmt::format("--problem-size has {} values; the spec's ProblemSize has {}",
                                   sizes.size(), s.problem_size.size()));
    s.problem_size = sizes;
  }
  return s;
}

void print_spec_warnings(const spec::KernelSpec& spec) {
  for (const std::string& w : spec.warnings) fmt::print(stderr, "cutune: warning: {}\n", w);
}

spec::SpecTask SpecOptions::task(bool require_kernel_file) const {
  spec::SpecTask t(load(require_kernel_file));
  print_spec_warnings(t.spec());
  return t;
}

std::string SpecOptions::resolved_arch() const { return arch.empty() ? default_arch() : arch; }

DeviceInfo SpecOptions::device() const {
  const std::string a = resolved_arch();
  for (const DeviceInfo& d : list_devices())
    if (d.arch() == a) return d;
  try {
    return target_limits(a);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

void TaskOrSpec::add_to(CLI::App& cmd, bool with_arch) {
  cmd_ = &cmd;
  with_arch_ = with_arch;
  task.add_to(cmd, with_arch, /*or_spec=*/true);
  cmd.add_option("--spec", spec_path,
                 "T1 kernel specification (JSON): a kernel of your own, in place of OP and "
                 "--shape");
  cmd.add_option("--problem-size", problem_size,
                 "with --spec: replace the spec's ProblemSize, e.g. 256,256");
  if (!with_arch)
    cmd.add_option("--arch", task.arch,
                   "with --spec: target architecture (default: detected GPU, else sm_90)");
}

bool TaskOrSpec::wants_spec(const std::vector<std::string>& operator_only,
                           const std::vector<std::string>& spec_only) const {
  const bool has_op = cmd_->count("op") > 0, has_spec = cmd_->count("--spec") > 0;
  if (has_op && has_spec) throw UsageError("give an operator or --spec FILE, not both");
  if (!has_op && !has_spec)
    throw UsageError(
        fmt::format("give an operator or --spec FILE (see cutune {} --help)", cmd_->get_name()));
  if (has_spec) {
    std::vector<std::string> names = {"--shape",  "--template", "--dtype",   "--out-dtype",
                                      "--layout", "--family",   "--epilogue"};
    names.insert(names.end(), operator_only.begin(), operator_only.end());
    reject_given(*cmd_, names, "goes with an operator, not --spec");
    return true;
  }
  std::vector<std::string> names = {"--problem-size"};
  if (!with_arch_) names.push_back("--arch");
  names.insert(names.end(), spec_only.begin(), spec_only.end());
  reject_given(*cmd_, names, "goes with --spec FILE, not an operator");
  if (task.shape.empty()) throw UsageError("--shape is required with an operator");
  return false;
}

SpecOptions TaskOrSpec::spec() const {
  return {.spec_path = spec_path, .problem_size = problem_size, .arch = task.arch,
          .json = task.json};
}

namespace spec_form {

void run_space(const SpecOptions& opts) {
  spec::SpecTask task = opts.task(false);
  const spec::KernelSpec& s = task.spec();
  const ConfigSpace& space = task.space();
  std::optional<uint64_t> valid = space.count_valid();
  if (opts.json) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : s.space.parameters)
      params.push_back({{"name", p.name}, {"values", p.values}});
    nlohmann::json conds = nlohmann::json::array();
    for (const auto& c : s.space.conditions) conds.push_back(c.expression);
    print_json({{"spec", opts.spec_path},
                {"kernel", s.kernel_name},
                {"kernel_file", s.kernel_file.string()},
                {"kernel_file_exists", s.kernel_file_exists},
                {"kernel_error", s.kernel_error},
                {"problem_size", s.problem_size},
                {"parameters", params},
                {"conditions", conds},
                {"size", space.size()},
                {"valid", valid ? nlohmann::json(*valid) : nlohmann::json(nullptr)}});
    return;
  }
  fmt::print("kernel {} in {}{}\n", s.kernel_name, s.kernel_file.string(),
             s.kernel_file_exists ? "" : " (file absent)");
  if (!s.kernel_error.empty()) fmt::print("kernel specification unusable: {}\n", s.kernel_error);
  fmt::print("problem size [{}]\n", fmt::join(s.problem_size, ", "));
  for (const auto& p : s.space.parameters)
    fmt::print("  {:<24} {:>4} values  [{}]\n", p.name, p.values.size(), values_text(p.values));
  for (const auto& c : s.space.conditions) fmt::print("  condition: {}\n", c.expression);
  fmt::print("space size {}, valid {}\n", space.size(),
             valid ? std::to_string(*valid) : "(too large to count)");
}

void run_show(const SpecOptions& opts, const std::string& config_text) {
  spec::SpecTask task = opts.task(true);
  Config c = parse_config(task.space(), config_text);
  if (auto why = task.space().violation(c)) throw UsageError("configuration violates " + *why);
  spec::SpecInstance in = task.instantiate(c);
  CudaSource src = task.nvrtc_source(in);
  const auto& l = in.launch;
  if (opts.json) {
    print_json({{"config", c.to_json()},
                {"grid", {l.grid.x, l.grid.y, l.grid.z}},
                {"block", {l.block.x, l.block.y, l.block.z}},
                {"dynamic_smem_bytes", l.dynamic_smem_bytes},
                {"elements", in.elements},
                {"kernel", src.kernel_name},
                {"source", src.code}});
    return;
  }
  fmt::print("config {}: {}\n", c.index(), c.to_string());
  fmt::print("launch grid ({},{},{}) block ({},{},{}) dynamic shared {} bytes\n", l.grid.x,
             l.grid.y, l.grid.z, l.block.x, l.block.y, l.block.z, l.dynamic_smem_bytes);
  if (auto why = spec::SpecTask::launch_violation(in, opts.device()))
    fmt::print("cannot launch: {}\n", *why);
  for (size_t i = 0; i < task.spec().arguments.size(); ++i) {
    const auto& a = task.spec().arguments[i];
    fmt::print("  arg {} {} {}{} x {}\n", i, a.name, spec::elem_name(a.type),
               a.is_scalar     ? " (scalar)"
               : a.is_constant ? " (constant memory)"
                               : "",
               in.elements[i]);
  }
  fmt::print("---- {} ----\n{}", src.kernel_name, in.defines);
}

void run_compile(const SpecOptions& opts, int sample, int jobs, uint64_t seed) {
  if (sample < 1) throw UsageError("--sample must be >= 1");
  if (jobs < 1) throw UsageError("--jobs must be >= 1");
  spec::SpecTask task = opts.task(true);
  const DeviceInfo device = opts.device();
  const auto start = std::chrono::steady_clock::now();
  std::vector<Config> configs = pick_configs(task.space(), sample, seed);
  std::vector<Config> built;
  std::vector<CudaSource> sources;
  int rejected = 0;
  nlohmann::json rejections = nlohmann::json::array();
  for (const Config& c : configs) {
    spec::SpecInstance in = task.instantiate(c);
    if (auto why = spec::SpecTask::launch_violation(in, device)) {
      ++rejected;
      rejections.push_back({{"config", c.index()}, {"reason", *why}});
      continue;
    }
    built.push_back(c);
    sources.push_back(task.nvrtc_source(in));
  }
  if (sources.empty())
    throw UsageError(fmt::format("no configuration of {} can launch on {}: {}", opts.spec_path,
                                 device.arch(), rejections[0]["reason"].get<std::string>()));
  BuildOptions build;
  build.arch = opts.resolved_arch();
  NvrtcBuilder builder(build, jobs);
  std::vector<CompileResult> results = builder.compile_batch(sources);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int compiled = 0, failed = 0, spilled = 0;
  std::vector<double> registers;
  // One entry per distinct log: a spec's error is usually the same in every configuration.
  nlohmann::json failures = nlohmann::json::array();
  std::map<std::string, size_t> failure_of_log;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      ++failed;
      std::string log = compile_log_for_people(results[i].log);
      if (log.size() > 2000) log = log.substr(0, 2000) + "\n...";
      auto [it, fresh] = failure_of_log.emplace(log, failures.size());
      if (fresh)
        failures.push_back({{"config", built[i].index()},
                            {"configs", nlohmann::json::array()},
                            {"log", std::move(log)}});
      failures[it->second]["configs"].push_back(built[i].index());
      continue;
    }
    ++compiled;
    if (results[i].ptxas.parsed) {
      registers.push_back(results[i].ptxas.registers);
      spilled += results[i].ptxas.spills();
    }
  }
  if (opts.json) {
    print_json({{"spec", opts.spec_path},
                {"arch", build.arch},
                {"configs", configs.size()},
                {"rejected", rejected},
                {"compiled", compiled},
                {"failed", failed},
                {"spilled", spilled},
                {"registers",
                 {{"min", percentile(registers, 0)},
                  {"median", percentile(registers, 0.5)},
                  {"max", percentile(registers, 1)}}},
                {"seconds", seconds},
                {"failures", failures},
                {"rejections", rejections}});
    if (compiled == 0) throw ExitStatus{1};
    return;
  }
  fmt::print(
      "{} configurations for {}: {} compiled, {} failed, {} rejected (device limits), {} spill\n",
      configs.size(), build.arch, compiled, failed, rejected, spilled);
  if (!registers.empty())
    fmt::print("registers min {} median {} max {}\n", percentile(registers, 0),
               percentile(registers, 0.5), percentile(registers, 1));
  for (const auto& f : failures) {
    const auto& which = f["configs"];
    std::string names = fmt::format("{}", which[0].get<uint64_t>());
    for (size_t k = 1; k < std::min<size_t>(which.size(), 8); ++k)
      names += fmt::format(", {}", which[k].get<uint64_t>());
    if (which.size() > 8) names += fmt::format(", ... ({} configurations)", which.size());
    fmt::print("config {} failed:\n{}\n", names, f["log"].get<std::string>());
  }
  fmt::print("{:.1f} s ({:.1f} configs/s, {} jobs)\n", seconds,
             seconds > 0 ? configs.size() / seconds : 0.0, jobs);
  // Some configurations of a user's kernel may not compile by design; none compiling is a
  // broken kernel or spec that a script must see.
  if (compiled == 0) throw ExitStatus{1};
}

void run_verify(const SpecOptions& opts, int sample, uint64_t seed, const std::string& config_text,
                const VerifySanitizer& sanitizer) {
  if (sample < 1) throw UsageError("--sample must be >= 1");
  spec::SpecTask task = opts.task(true);
  std::vector<Config> configs;
  if (!config_text.empty())
    configs.push_back(parse_config(task.space(), config_text));
  else
    configs = pick_configs(task.space(), sample, seed);
  const Config reference = reference_config(task);
  require_fits(task, opts, reference, kMaxEmulatedBytes, "the emulator");
  for (const Config& c : configs) require_fits(task, opts, c, kMaxEmulatedBytes, "the emulator");
  ReferenceText described = describe_reference(task, reference);
  if (!opts.json) fmt::print("{}\n", described.line);
  emu::Emulator emulator(verify_emulator_options(sanitizer));
  spec::SpecVerifier verifier(task, emulator, opts.device());
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (!verifier.reference()) {
    // A spec the reference cannot come from is bad input; a reference configuration (or
    // kernel) that races, goes out of bounds or crashes is a failed check of the kernel.
    if (!verifier.reference_check()) throw UsageError(verifier.reference_error());
    const spec::SpecCheck& r = *verifier.reference_check();
    if (opts.json) {
      described.json["status"] = r.status;
      described.json["message"] = r.message;
      print_json({{"spec", opts.spec_path},
                  {"reference", described.json},
                  {"passed", 0},
                  {"total", configs.size()},
                  {"seconds", seconds()},
                  {"results", nlohmann::json::array()}});
    } else {
      fmt::print("reference  {:<13} {}\n", r.status, r.message);
      fmt::print("0 of {} passed: the reference failed, so no configuration was checked\n",
                 configs.size());
    }
    throw ExitStatus{1};
  }
  VerifyReport report(configs.size());
  std::string last_rejection;
  for (const Config& config : configs) {
    const spec::SpecCheck r = verifier.check(config);
    if (r.status == "rejected") last_rejection = r.message;
    const std::string line = report.add(config, r);
    if (!opts.json) fmt::print("{}\n", line);
  }
  if (report.rejected() == static_cast<int>(configs.size()))
    throw UsageError(
        fmt::format("no configuration of {} can run: {}", opts.spec_path, last_rejection));
  if (opts.json) {
    print_json({{"spec", opts.spec_path},
                {"reference", described.json},
                {"passed", report.passed()},
                {"rejected", report.rejected()},
                {"total", configs.size()},
                {"seconds", seconds()},
                {"results", report.results()}});
  } else {
    fmt::print("{}\n", report.summary(seconds(), "by the spec's conditions or device limits"));
  }
  if (!report.all_passed()) throw ExitStatus{1};
}

// `export LOG --spec SPEC --out DIR`: the best configuration's cubin, source and manifest.
void run_export(const SpecOptions& opts, const std::string& log, const std::string& out,
                const std::string& task_filter) {
  if (std::filesystem::exists(out) && !std::filesystem::is_directory(out))
    throw UsageError(fmt::format("--out {} exists and is not a folder", out));
  const spec::SpecTask task = opts.task(true);
  const spec::SpecExport e =
      spec::export_spec_best(task, log_records(log, task_filter), out, opts.arch);
  if (opts.json) {
    print_json(e.entry);
    return;
  }
  fmt::print("wrote {}, {} and {} ({} {}: config {}, {:.4g} ms)\n", e.cubin.string(),
             e.source.string(), e.manifest.string(), e.entry["kernel"].get<std::string>(),
             e.entry["task"]["arch"].get<std::string>(),
             e.entry["config"]["index"].get<uint64_t>(), e.entry["time_s"].get<double>() * 1e3);
}

// `bench --spec SPEC [--config C]... [--log LOG]`: the reference configuration, the given ones
// and the log's best, each checked and timed on the GPU with the tuner's harness (longer runs,
// no early stop).
void run_bench(const SpecOptions& opts, const std::vector<std::string>& configs,
               const std::string& log, double seconds, bool no_flush) {
  if (!(seconds > 0 && seconds <= 60)) throw UsageError("--seconds must be in (0, 60]");
  const spec::SpecTask task = opts.task(true);
  std::vector<std::pair<std::string, Config>> todo;
  todo.emplace_back("reference", reference_config(task));
  for (const std::string& c : configs) todo.emplace_back("config", parse_config(task.space(), c));
  if (!log.empty()) {
    std::vector<Record> mine;
    for (const Record& r : log_records(log, "")) {
      try {
        std::vector<int64_t> p;
        for (const auto& param : task.spec().space.parameters)
          p.push_back(r.knobs.at(param.name).get<int64_t>());
        Record copy = r;
        copy.config_index = task.config_of(p).index();
        if (r.result.ok()) mine.push_back(copy);
      } catch (const std::exception&) {
        // not a configuration of this spec
      }
    }
    const std::vector<Record> best = best_records(mine, 1);
    if (best.empty()) throw UsageError(fmt::format("{} has no ok record of this spec", log));
    todo.emplace_back("log best", task.space().get(best.front().config_index));
  }
  for (const auto& [what, c] : todo) require_fits(task, opts, c, kMaxDeviceBytes, "any GPU");
  task.source();
  GpuMeasureOptions gpu;
  gpu.arch = opts.arch;
  gpu.flush_l2 = !no_flush;
  gpu.min_repeats = 20;
  gpu.max_repeats = 1000;
  gpu.max_measure_seconds = seconds;
  gpu.early_stop_factor = 0;
  std::unique_ptr<Measurer> measurer;
  try {
    measurer = make_gpu_measurer(spec::spec_kernel_task(task), gpu);
  } catch (const NoDeviceError& e) {
    throw NoDeviceError(fmt::format("{}; without a GPU: cutune verify --spec {} (the emulator)",
                                    e.what(), opts.spec_path));
  } catch (const WorkerError& e) {
    throw UsageError(fmt::format("{}: {}", opts.spec_path, e.what()));
  }
  std::vector<Config> batch;
  for (const auto& [what, c] : todo) batch.push_back(c);
  const std::vector<MeasureResult> results = measurer->measure(batch);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const MeasureResult& r = results[i];
    nlohmann::json j = {{"name", todo[i].first},
                        {"config", batch[i].to_json()},
                        {"status", std::string(to_string(r.status))},
                        {"error", r.error},
                        {"timer", std::string(to_string(r.timer))},
                        {"runs", r.times_s.size()}};
    if (r.ok()) {
      j["median_s"] = r.median_s();
      j["max_rel_error"] = r.max_rel_error;
      if (r.details.timing.median_ci_s) j["median_ci_s"] = *r.details.timing.median_ci_s;
    }
    rows.push_back(std::move(j));
  }
  nlohmann::json out = {{"spec", opts.spec_path},
                        {"device", measurer->device_name()},
                        {"arch", measurer->target_arch()},
                        {"flush_l2", !no_flush},
                        {"results", rows}};
  if (results.front().ok())
    for (size_t i = 1; i < results.size(); ++i)
      if (results[i].ok())
        out["results"][i]["speedup_over_reference"] =
            results.front().median_s() / results[i].median_s();
  if (opts.json) {
    print_json(out);
    return;
  }
  fmt::print("{} ({}), {}, L2 flush {}\n", measurer->device_name(), measurer->target_arch(),
             opts.spec_path, no_flush ? "off" : "on");
  for (const nlohmann::json& r : out["results"]) {
    if (r["status"] != "ok") {
      fmt::print("  {:<10} {} {}\n", r["name"].get<std::string>(), r["status"].get<std::string>(),
                 r["error"].get<std::string>());
      continue;
    }
    fmt::print("  {:<10} {:>10.2f} us  ({} runs, {}){}  {}\n", r["name"].get<std::string>(),
               r["median_s"].get<double>() * 1e6, r["runs"].get<size_t>(),
               r["timer"].get<std::string>(),
               r.contains("speedup_over_reference")
                   ? fmt::format("  {:.2f}x the reference", r["speedup_over_reference"].get<double>())
                   : "",
               r["config"].dump());
  }
}

}  // namespace spec_form

}  // namespace cutune::cli
