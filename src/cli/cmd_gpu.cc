// cutune export | bench | __worker: the commands of the GPU runtime.
//
// `bench` times the library baseline — cuBLAS SGEMM (TF32 off) for gemm, cuDNN's fastest fp32
// algorithm (CUDNN_FMA_MATH) for conv2d and depthwise_conv2d — and the best kernel of a tuning
// log in the same worker, with the same timer and the same L2 flush, interleaved (baseline,
// tuned, baseline, tuned, ...: measure_interleaved), so their ratio is fair. The log's record
// must come from this GPU's kind (--any-device to take another's); without an ok record the
// baseline is still timed and printed. Their --spec forms (and `export --t4`) are cmd_spec.cc's.

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/cli/cli_common.h"
#include "src/cli/cmd_bench_range.h"
#include "src/cli/cmd_spec.h"
#include "src/tune/dispatch_table.h"
#include "src/records/tuning_log.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/export/export_log.h"
#include "src/export/export_table.h"
#include "src/measure/worker_gpu.h"
#include "src/measure/worker_main.h"
#include "src/measure/gpu_measurer.h"

namespace cutune::cli {

namespace {

struct ExportArgs {
  std::string log;
  std::string out;
  bool json = false;
  std::string table;  // --table: a dispatch table of tune --shape M=lo..hi, in place of a log
};

void run_export(const ExportArgs& args) {
  if (args.log.empty() == args.table.empty())
    throw UsageError("export takes a LOG or --table TABLE.json (one of them)");
  const std::string& input = args.table.empty() ? args.log : args.table;
  if (!std::filesystem::exists(input))
    throw UsageError(fmt::format("no such {}: {}", args.table.empty() ? "log" : "table", input));
  if (std::filesystem::exists(args.out) && !std::filesystem::is_directory(args.out))
    throw UsageError(fmt::format("--out {} exists and is not a folder", args.out));
  const ExportSummary s =
      args.table.empty() ? export_log(args.log, args.out) : export_table(args.table, args.out);
  if (args.json) {
    print_json({{"out", args.out}, {"written", s.written}, {"skipped", s.skipped}});
    return;
  }
  for (const std::string& name : s.written) fmt::print("wrote {}/{}.cubin, .cu\n", args.out, name);
  for (const std::string& why : s.skipped) fmt::print("skipped {}\n", why);
  fmt::print("{} kernel(s) and {}/manifest.json\n", s.written.size(), args.out);
}

struct BenchArgs {
  TaskOptions task;
  std::string log;
  bool no_flush = false;
  int device = 0;
  double seconds = 2.0;
  int rounds = 5;
  bool any_device = false;
  std::vector<std::string> configs;  // --config: more configurations timed beside the others
  std::string table;  // --table: a dispatch table, timed over a range of M (--shape M=lo..hi)
  int points = 12;    // --points: the most points of that range
};

// fp32 FMA peak: SMs x clock x 128 FMA lanes per SM per clock x 2 flops.
double fp32_peak_flops(const DeviceInfo& d) {
  return double(d.sm_count) * double(d.clock_khz) * 1e3 * 128.0 * 2.0;
}

void run_bench(const BenchArgs& args) {
  auto tmpl = args.task.make();
  const BaselineSpec declared = tmpl->baseline();
  const bool gemm = declared.kind == BaselineSpec::Kind::gemm;
  if (declared.kind == BaselineSpec::Kind::none)
    throw UsageError(
        fmt::format("bench: {} ({}) declares no cuBLAS or cuDNN baseline to compare with",
                    tmpl->op(), tmpl->name()));
  // Configurations named on the command line are checked before anything needs a GPU.
  // One named twice (by index and by knobs, say) is timed once.
  std::vector<Config> configs;
  for (const std::string& text : args.configs) {
    Config c = parse_config(tmpl->space(), text);
    if (std::optional<std::string> why = tmpl->space().violation(c))
      throw UsageError(fmt::format("--config {}: {}", text, *why));
    const auto same = [&](const Config& o) { return o.index() == c.index(); };
    if (std::none_of(configs.begin(), configs.end(), same)) configs.push_back(std::move(c));
  }
  require_driver();
  const std::vector<DeviceInfo> devices = list_devices();
  if (args.device < 0 || size_t(args.device) >= devices.size())
    throw UsageError(fmt::format("--device {}: {} device(s) present", args.device, devices.size()));
  const DeviceInfo& device = devices[size_t(args.device)];

  // The log first: a record of another GPU kind is refused before anything is timed.
  std::optional<Record> record;
  std::string no_record_note;
  if (!args.log.empty()) {
    const LogReadResult read = read_log(args.log, {.lenient = true});
    const DeviceBest best = best_record_on_device(read.records, tmpl->op(), tmpl->shape(),
                                                  tmpl->name(), device.name, args.any_device);
    record = best.record;
    if (!record && !best.other_devices.empty())
      throw UsageError(fmt::format(
          "{} holds records of {} {} from {} only, not from this GPU ({}); add --any-device to "
          "time their best here",
          args.log, tmpl->name(), args.task.shape, fmt::join(best.other_devices, ", "),
          device.name));
    if (!record)
      no_record_note = fmt::format("{} has no ok record for {} {}: the baseline alone is timed",
                                   args.log, tmpl->name(), args.task.shape);
  }

  GpuMeasureOptions options;
  options.device = args.device;
  options.flush_l2 = !args.no_flush;
  options.min_repeats = std::max(20 / std::max(args.rounds, 1), 5);
  options.max_repeats = 1000;
  options.max_measure_seconds = args.seconds / std::max(args.rounds, 1);
  options.timeout_seconds = 30;
  options.early_stop_factor = 0;
  options.compile_jobs = 1;
  const std::string baseline_name = !gemm                                       ? "cudnn"
                                    : declared.gemm.input == ir::DType::Float32 ? "cublas_sgemm"
                                                                                : "cublas_gemm_ex";
  // The record's configuration first, then the --config ones, all through the tuner's measurer.
  std::vector<Config> timed_configs;
  if (record) timed_configs.push_back(tmpl->space().get(record->config_index));
  timed_configs.insert(timed_configs.end(), configs.begin(), configs.end());
  std::unique_ptr<Measurer> measurer = make_gpu_measurer(*tmpl, options, device);
  const std::vector<MeasureResult> timed = measurer->versus_baseline(timed_configs, args.rounds);
  const MeasureResult& baseline_result = timed[0];

  const double peak = fp32_peak_flops(device);
  const double flops = tmpl->flops();
  auto row = [&](const std::string& name, const MeasureResult& r) {
    const double t = r.median_s();
    nlohmann::json j = {{"name", name},
                        {"status", std::string(to_string(r.status))},
                        {"timer", std::string(to_string(r.timer))},
                        {"error", r.error},
                        {"runs", r.times_s.size()}};
    if (r.ok()) {
      j["median_s"] = t;
      j["tflops"] = flops / t * 1e-12;
      j["percent_of_fp32_peak"] = peak > 0 ? 100.0 * flops / t / peak : 0.0;
      const MeasureDetails& d = r.details;
      if (d.timing.median_ci_s) j["median_ci_s"] = *d.timing.median_ci_s;
      if (d.gpu.throttled) j["throttled"] = *d.gpu.throttled;
      if (d.rounds.rounds) j["rounds"] = *d.rounds.rounds;
      if (d.rounds.round_medians_s) j["round_medians_s"] = *d.rounds.round_medians_s;
      if (d.gpu.gpu_before) j["gpu_before"] = to_json(*d.gpu.gpu_before);
      if (d.gpu.gpu_after) j["gpu_after"] = to_json(*d.gpu.gpu_after);
    }
    return j;
  };
  nlohmann::json out = {{"device", device.name},
                        {"arch", device.arch()},
                        {"shape", tmpl->shape()},
                        {"template", tmpl->name()},
                        {"flush_l2", !args.no_flush},
                        {"fp32_peak_tflops", peak * 1e-12},
                        {"op", tmpl->op()},
                        {"baseline", baseline_name},
                        {"interleaved_rounds", args.rounds},
                        {"results", {row(baseline_name, baseline_result)}}};
  if (!no_record_note.empty()) out["note"] = no_record_note;
  const BaselineFacts& b = baseline_result.details.baseline;
  if (gemm && b.cublas_algo) out["results"][0]["algo"] = *b.cublas_algo;
  if (!gemm && !baseline_result.details.empty()) {
    out["reference"] = b.reference.value_or("");
    if (b.baseline_algo) out["results"][0]["algo"] = *b.baseline_algo;
    if (b.cudnn_note) out["cudnn_note"] = *b.cudnn_note;
  }
  const auto mixed = [](const MeasureResult& r) {
    return r.details.rounds.mixed_timers.value_or(false);
  };
  // The baseline's time over a kernel's, where both were timed the same way.
  const auto ratio_of = [&](const MeasureResult& tuned) -> std::optional<double> {
    if (!tuned.ok() || !baseline_result.ok() || tuned.timer != baseline_result.timer ||
        mixed(tuned) || mixed(baseline_result))
      return std::nullopt;
    return baseline_result.median_s() / tuned.median_s();
  };
  if (record) {
    const MeasureResult& tuned = timed[1];
    out["results"].push_back(row(fmt::format("cutune config {}", record->config_index), tuned));
    out["record_device"] = record->task.device_name;
    if (tuned.ok() && baseline_result.ok()) {
      if (std::optional<double> ratio = ratio_of(tuned)) {
        out["ratio_to_baseline"] = *ratio;
        out[gemm ? "ratio_to_cublas" : "ratio_to_cudnn"] = *ratio;
      } else {
        out["ratio_note"] = fmt::format("no ratio: the baseline was timed by {} and cutune by {}",
                                        to_string(baseline_result.timer), to_string(tuned.timer));
      }
    }
  }
  for (size_t i = 0; i < configs.size(); ++i) {
    const MeasureResult& r = timed[(record ? 2 : 1) + i];
    nlohmann::json j = row(fmt::format("--config {}", configs[i].index()), r);
    j["config"] = configs[i].to_json()["knobs"];
    if (std::optional<double> ratio = ratio_of(r)) j["ratio_to_baseline"] = *ratio;
    out["results"].push_back(std::move(j));
  }
  if (args.task.json) {
    print_json(out);
    return;
  }
  fmt::print("{} ({}), {} {} {}, L2 flush {}, fp32 peak {:.1f} TFLOP/s\n", device.name,
             device.arch(), tmpl->op(), args.task.shape, tmpl->name(), args.no_flush ? "off" : "on",
             peak * 1e-12);
  for (const nlohmann::json& r : out["results"]) {
    if (r["status"] != "ok") {
      fmt::print("  {:<24} {} {}\n", r["name"].get<std::string>(), r["status"].get<std::string>(),
                 r["error"].get<std::string>());
      continue;
    }
    fmt::print("  {:<24} {:>10.2f} us  {:>7.2f} TFLOP/s  {:>5.1f}% of peak  ({} runs, {})\n",
               r["name"].get<std::string>(), r["median_s"].get<double>() * 1e6,
               r["tflops"].get<double>(), r["percent_of_fp32_peak"].get<double>(),
               r["runs"].get<size_t>(), r["timer"].get<std::string>());
  }
  if (out.contains("cudnn_note")) fmt::print("  note: {}\n", out["cudnn_note"].get<std::string>());
  if (out.contains("note")) fmt::print("  note: {}\n", out["note"].get<std::string>());
  if (out.contains("ratio_note")) fmt::print("  note: {}\n", out["ratio_note"].get<std::string>());
  if (out.contains("ratio_to_baseline"))
    fmt::print("  cutune / {} speed: {:.3f}\n", gemm ? "cuBLAS" : "cuDNN",
               out["ratio_to_baseline"].get<double>());
  for (const nlohmann::json& r : out["results"]) {
    if (r.contains("ratio_to_baseline"))
      fmt::print("  {} / {} speed: {:.3f}\n", r["name"].get<std::string>(),
                 gemm ? "cuBLAS" : "cuDNN", r["ratio_to_baseline"].get<double>());
  }
}

}  // namespace

void add_gpu_commands(CLI::App& app) {
  auto* ex = app.add_subcommand(
      "export",
      "write the best kernel of each task in a log as .cubin, .cu and manifest.json (with "
      "--spec: of a user kernel's log; with --t4: the log's measurements as T4 results)");
  auto ex_args = std::make_shared<ExportArgs>();
  auto ex_spec = std::make_shared<SpecOptions>();
  auto ex_task = std::make_shared<std::string>();
  auto ex_t4 = std::make_shared<bool>(false);
  auto ex_force = std::make_shared<bool>(false);
  ex->add_option("log", ex_args->log, "tuning log (or --table)");
  ex->add_option("--table", ex_args->table,
                 "a dispatch table (cutune tune --shape M=lo..hi,N,K --table FILE): its kernels "
                 "of run-time M and the table in the manifest, in place of a log");
  ex->add_option("--out", ex_args->out, "output folder (with --t4: the file to write)")
      ->required();
  ex->add_flag("--json", ex_args->json, "machine-readable output");
  ex->add_option("--spec", ex_spec->spec_path,
                 "T1 kernel specification (JSON): export the best configuration of that kernel");
  ex->add_option("--problem-size", ex_spec->problem_size,
                 "with --spec: replace the spec's ProblemSize, e.g. 256,256");
  ex->add_option("--arch", ex_spec->arch,
                 "with --spec: target architecture (default: detected GPU, else sm_90)");
  ex->add_flag("--t4", *ex_t4, "write the log's measurements as T4 results (JSON) to --out");
  ex->add_option("--task", *ex_task, "with --spec or --t4: the task, when the log holds several");
  ex->add_flag("--force", *ex_force, "with --t4: replace --out if it exists");
  ex->callback([ex, ex_args, ex_spec, ex_task, ex_t4, ex_force] {
    const bool spec = ex->count("--spec") > 0;
    if (*ex_t4 || spec) {
      reject_given(*ex, {"--table"}, "exports a dispatch table alone; drop --spec and --t4");
      if (ex_args->log.empty()) throw UsageError("export needs the LOG");
    }
    if (*ex_t4) {
      if (spec) throw UsageError("give --spec FILE or --t4, not both");
      reject_given(*ex, {"--json", "--problem-size", "--arch"}, "does not go with --t4");
      return spec_form::run_t4_export(ex_args->log, ex_args->out, *ex_task, *ex_force);
    }
    reject_given(*ex, {"--force"}, "goes with --t4 (an export folder's files are replaced)");
    if (spec) {
      ex_spec->json = ex_args->json;
      return spec_form::run_export(*ex_spec, ex_args->log, ex_args->out, *ex_task);
    }
    reject_given(*ex, {"--problem-size", "--arch", "--task"}, "goes with --spec FILE");
    run_export(*ex_args);
  });

  auto* bench = app.add_subcommand("bench",
                                   "time cuBLAS (gemm) or cuDNN (conv2d, depthwise_conv2d) and the "
                                   "tuned kernel of a log on the GPU (with --spec: a user "
                                   "kernel's reference configuration, given ones and a log's best)");
  auto bench_args = std::make_shared<BenchArgs>();
  auto bench_form = std::make_shared<TaskOrSpec>();
  bench_form->add_to(*bench, /*with_arch=*/false);
  bench->add_option("--log", bench_args->log, "tuning log whose best kernel for the task is timed");
  bench->add_flag("--no-flush", bench_args->no_flush, "keep L2 warm between runs");
  bench->add_option("--device", bench_args->device, "CUDA device ordinal")->capture_default_str();
  bench->add_option("--seconds", bench_args->seconds, "time cap per kernel, all rounds together")
      ->capture_default_str();
  bench->add_option("--rounds", bench_args->rounds,
                    "baseline and tuned kernel measured in turn this many times")
      ->capture_default_str();
  bench
      ->add_option("--config", bench_args->configs,
                   "configurations (index or JSON) timed beside the baseline and the log's best, "
                   "each with its ratio (one named twice is timed once)")
      ->expected(1, -1);
  bench->add_flag("--any-device", bench_args->any_device,
                  "take the log's best record even when another GPU kind measured it");
  bench->add_option("--table", bench_args->table,
                    "with --shape M=lo..hi,N,K: the dispatch table (tune --table) timed against "
                    "cuBLAS at the range's points and the M between them");
  bench->add_option("--points", bench_args->points, "with --table: the most points of the range")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  bench->callback([bench, bench_args, bench_form] {
    if (bench_form->wants_spec({"--device", "--rounds", "--any-device"}))
      return spec_form::run_bench(bench_form->spec(), bench_args->configs, bench_args->log,
                                  bench_args->seconds, bench_args->no_flush);
    if (bench_args->rounds < 1 || bench_args->rounds > 100)
      throw UsageError(fmt::format("--rounds must be in [1, 100] (got {})", bench_args->rounds));
    bench_args->task = bench_form->task;
    if (is_m_range(bench_args->task.shape)) {
      reject_given(*bench, {"--log", "--config", "--any-device"}, "does not go with a range of M");
      return run_bench_range(bench_args->task, bench_args->table, bench_args->points,
                             bench_args->rounds, bench_args->seconds, bench_args->no_flush,
                             bench_args->device);
    }
    reject_given(*bench, {"--table", "--points"}, "takes a range of M: --shape M=lo..hi,N,K");
    run_bench(*bench_args);
  });

  // The measuring worker (see src/measure/worker_process.h); not for people.
  auto* worker = app.add_subcommand("__worker", "");
  worker->group("");
  worker->allow_extras();
  worker->callback([worker] { std::exit(worker_main(worker->remaining())); });
}

}  // namespace cutune::cli
