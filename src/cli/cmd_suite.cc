// cutune tune-suite: tunes every layer of a network suite (kernels/layer_suites.h) on the GPU,
// one after another into one log, and compares each with cuDNN measured in the same worker.
//
// Transfer learning is on by default: before each layer, the records of the layers already in
// the log (same template, other shapes) train the global model that guides the first rounds
// of the xgb tuner (src/tune/transfer_model.h).
//
// The cuDNN time of a layer is the `baseline_s` the worker attaches to every result of a
// convolution task (src/measure/worker_gpu.h), read back from the layer's records in the log;
// so a resumed or re-printed suite needs no GPU time for it.
//
// Each layer is a task of the one resolver (tune_task.h: its template, measurer, features,
// seed configurations and FLOPs), as `cutune tune OP --shape` would make it.

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "kernels/gemm_suites.h"
#include "kernels/layer_suites.h"
#include "src/cli/cli_common.h"
#include "src/cli/cmd_tune.h"
#include "src/cli/suite_tasks.h"
#include "src/cli/tune_task.h"
#include "src/distributed/suite_runner.h"
#include "src/measure/worker_protocol.h"
#include "src/records/baseline_ratio.h"
#include "src/records/tuning_log.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/tune/tuning_session.h"

namespace cutune::cli {

namespace {

struct SuiteArgs {
  std::string suite;
  int trials = 200;
  int batch = 64;
  std::string log;
  int64_t batch_size = 1;
  std::string tuner = "xgb";
  bool no_transfer = false;
  bool resume = false;
  uint64_t seed = 0;
  bool quiet = false;
  bool json = false;
  std::string layers;            // comma-separated layer names; empty: all
  std::string dtype = "fp32";    // the layers' input type (suite_layer_op)
  std::string template_name;     // empty: each operator's default template
  std::string device = "gpu";    // or emulator (correctness only)
  bool coordinator_only = false;
  std::string tokens;            // GEMM suites: token counts (M); empty: default_tokens()
  std::string model;             // a model file (gemm_suites.h) in place of a suite name
};

bool gemm_suite(const SuiteArgs& args) { return !args.model.empty() || is_gemm_suite(args.suite); }

// The layers the command names: a network's at --batch-size, or a transformer model's GEMMs
// (built in, or from --model FILE) at --tokens.
std::vector<SuiteLayer> named_layers(const SuiteArgs& args) {
  if (!gemm_suite(args)) {
    if (!args.tokens.empty())
      throw UsageError(fmt::format("--tokens goes with a transformer model (llama3-8b or "
                                   "--model FILE), not {}", args.suite));
    if (args.batch_size < 1 || args.batch_size > 256)
      throw UsageError(fmt::format("--batch-size {}: give 1 to 256", args.batch_size));
    return suite_layers(args.suite, args.batch_size);
  }
  if (args.batch_size != 1)
    throw UsageError("--batch-size goes with a network suite; a model's GEMMs take --tokens");
  const std::vector<int64_t> tokens =
      args.tokens.empty() ? default_tokens() : parse_tokens(args.tokens);
  if (args.model.empty()) return gemm_suite_layers(gemm_model(args.suite), tokens);
  require_readable_file(args.model, "--model");
  std::ifstream in(args.model);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("--model {}: not JSON (byte {})", args.model, e.byte));
  }
  return gemm_suite_layers(gemm_model_from_json(j, args.model), tokens);
}

// The suite's layers, or those named in `names` (in the suite's order).
std::vector<SuiteLayer> chosen_layers(const std::vector<SuiteLayer>& all,
                                      const std::string& names) {
  if (names.empty()) return all;
  std::vector<std::string> wanted;
  for (size_t start = 0; start <= names.size();) {
    const size_t end = std::min(names.find(',', start), names.size());
    wanted.push_back(names.substr(start, end - start));
    start = end + 1;
  }
  std::string known;
  for (const SuiteLayer& l : all) known += (known.empty() ? "" : ", ") + l.name;
  std::vector<SuiteLayer> out;
  for (const std::string& w : wanted)
    if (std::none_of(all.begin(), all.end(), [&](const SuiteLayer& l) { return l.name == w; }))
      throw UsageError(fmt::format("--layers: no layer '{}' in the suite (known: {})", w, known));
  for (const SuiteLayer& l : all)
    if (std::find(wanted.begin(), wanted.end(), l.name) != wanted.end()) out.push_back(l);
  return out;
}

struct LayerOutcome {
  SuiteLayer layer;
  TaskKey key;
  TuneSummary summary;
  std::optional<double> baseline_s, tuned_s;  // the library's (cuDNN, cuBLAS) and ours
  std::string reference;  // which reference checked the candidates: cudnn, cpu
  int transfer_tasks = 0;
  double setup_s = 0;  // GPU suite: the layer's measurer and session, before tuning starts
  std::shared_ptr<const Template> tmpl;  // keeps summary.best's space alive
};

std::vector<Record> log_records(const std::string& path) {
  if (!std::filesystem::exists(path)) return {};
  return read_log(path, {.lenient = true}).records;
}

// The library baseline and the reference recorded with this task's results: the median of the
// baseline_s values (one per worker start), and the reference of the last ok record.
void read_baseline(const std::vector<Record>& records, LayerOutcome& out) {
  std::vector<double> times;
  for (const Record& r : records) {
    if (!(r.task == out.key)) continue;
    const BaselineFacts& b = r.result.details.baseline;
    if (b.baseline_s && std::isfinite(*b.baseline_s)) times.push_back(*b.baseline_s);
    if (r.result.ok() && b.reference) out.reference = *b.reference;
  }
  if (!times.empty()) out.baseline_s = percentile(times, 0.5);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t v : shape) s += (s.empty() ? "" : ",") + std::to_string(v);
  return s;
}

// The library the layers are compared with ("cuDNN", "cuBLAS"; "library" for a mix).
std::string library_of(const std::vector<LayerOutcome>& rows) {
  std::string library;
  for (const LayerOutcome& o : rows) {
    const std::string l = o.tmpl ? o.tmpl->baseline().library() : "";
    if (l.empty()) continue;
    if (!library.empty() && library != l) return "library";
    library = l;
  }
  return library.empty() ? "library" : library;
}

// The whole model's time, each layer's times its repeat, over the layers with both times.
struct SummedTimes {
  double baseline_s = 0, tuned_s = 0;
  int layers = 0;
};
SummedTimes summed_times(const std::vector<LayerOutcome>& rows) {
  SummedTimes t;
  for (const LayerOutcome& o : rows) {
    if (!o.baseline_s || !o.tuned_s) continue;
    t.baseline_s += *o.baseline_s * o.layer.repeat;
    t.tuned_s += *o.tuned_s * o.layer.repeat;
    ++t.layers;
  }
  return t;
}

void print_table(const std::string& suite, const std::vector<LayerOutcome>& rows,
                 const BaselineRatios& ratios) {
  const std::string library = library_of(rows);
  fmt::print("\n{:<12} {:<28} {:<34} {:>11} {:>11} {:>8}\n", "layer", "shape", "",
             library + " ms", "tuned ms", "speedup");
  for (const LayerOutcome& o : rows) {
    const auto ms = [](std::optional<double> t) {
      return t ? fmt::format("{:.4f}", *t * 1e3) : std::string("-");
    };
    const std::string speedup =
        o.baseline_s && o.tuned_s ? fmt::format("{:.2f}x", *o.baseline_s / *o.tuned_s) : "-";
    fmt::print("{:<12} {:<28} {:<34} {:>11} {:>11} {:>8}\n", o.layer.name,
               shape_text(o.layer.shape), o.layer.description, ms(o.baseline_s), ms(o.tuned_s),
               speedup);
  }
  if (ratios.geomean) {
    fmt::print(
        "speedup over {} ({}), over the {} of {} layers with both times: geometric mean "
        "{:.3f}x, median {:.3f}x\n",
        library, suite, ratios.counted, ratios.total, *ratios.geomean, *ratios.median);
    const SummedTimes t = summed_times(rows);
    fmt::print("summed over those layers, each times its repeat: {} {:.4f} ms, tuned {:.4f} ms "
               "({:.3f}x)\n",
               library, t.baseline_s * 1e3, t.tuned_s * 1e3, t.baseline_s / t.tuned_s);
  } else {
    fmt::print("speedup over {} ({}): - (none of the {} layers has both times)\n", library, suite,
               ratios.total);
  }
}

// Every layer's task from the one resolver (tune_task.h), before the log or the GPU is looked
// at (a bad --dtype or --template is a usage error). Without --template each layer's operator
// gets its default for the GPU found (else sm_90): on Hopper the wgmma convolutions for --dtype
// fp16 and bf16. On a GPU, the first one measures (tune-suite has no --devices).
std::vector<TuneTask> layer_tasks(const SuiteArgs& args, const std::vector<SuiteLayer>& layers,
                                  const SearchOptions& search) {
  const std::string arch = args.template_name.empty() ? default_arch() : "";
  MeasureChoice measure;
  measure.device = args.device;
  if (args.device == "gpu") measure.devices = "0";
  std::vector<TuneTask> tasks;
  for (const SuiteLayer& layer : layers) {
    TaskSource source;
    source.op.op = suite_layer_op(layer, args.dtype);
    source.op.shape = shape_text(layer.shape);
    if (!layer.epilogue.empty())
      throw UsageError(fmt::format("layer {}: epilogue '{}': suites take no epilogues yet",
                                   layer.name, layer.epilogue));
    TaskRequest request;
    request.op = source.op.op;
    request.layout = layer.layout;
    source.op.template_name = args.template_name.empty()
                                  ? resolve_template(request, arch).name
                                  : args.template_name;
    tasks.push_back(resolve_tune_task(source, measure, search));
  }
  return tasks;
}

LayerOutcome layer_outcome(const SuiteLayer& layer, const TuneTask& task,
                           const TuneSummary& summary, int transfer_tasks) {
  LayerOutcome out;
  out.layer = layer;
  out.key = task.key;
  out.summary = summary;
  out.transfer_tasks = transfer_tasks;
  out.tmpl = task.tmpl;
  if (summary.best) out.tuned_s = summary.best_s;
  return out;
}

// tune-suite under mpirun (or --coordinator-only, or --device emulator): the layers through
// the suite engine (suite_tasks.h). Layers of different templates are searched at once; a
// layer learns from the earlier layers of its template, waiting for them (the fixed rule that
// keeps the records independent of the number of ranks). Every rank builds and measures the
// candidates it is sent with measurers of its own; rank 0 names the layers after its own (so
// it needs a GPU of the kind, even with --coordinator-only).
std::vector<LayerOutcome> tune_layers_scaled(const SuiteArgs& args, const SearchOptions& search,
                                             const std::vector<SuiteLayer>& layers,
                                             std::vector<TuneTask> tasks) {
  const bool coordinator = distributed::process_rank() == 0;
  if (coordinator && args.device != "emulator") require_driver();
  SuiteTasks suite(std::move(tasks), args.coordinator_only);
  distributed::SuiteOptions o;
  o.tune = suite[0].search.tune_options();  // the measuring kind's re-measurement and pipeline
  o.tune.log = args.log;
  o.tune.resume = args.resume;
  o.tune.progress = !args.quiet;  // the live line, when there is one layer
  o.make_policy = search.policy_factory();
  o.transfer = search.tuner == TunerKind::xgb && !args.no_transfer;
  o.coordinator_only = args.coordinator_only;
  if (coordinator && !suite[0].note().empty()) fmt::print(stderr, "{}\n", suite[0].note());
  const double start = monotonic_seconds();
  const std::vector<distributed::SuiteOutcome> outcomes =
      suite.run(o, [&](size_t t, const distributed::SuiteOutcome& out, int finished) {
        if (args.quiet) return;
        const double elapsed = monotonic_seconds() - start;
        fmt::print(
            stderr, "[suite {}/{} layers, {:.0f} s] {} {}: {} trials{}\n", finished, layers.size(),
            elapsed, layers[t].name, suite[t].key.template_name, out.summary.total(),
            out.transfer_tasks > 0 ? fmt::format(", transfer from {} layer(s)", out.transfer_tasks)
                                   : "");
      });
  std::vector<LayerOutcome> rows;
  if (!coordinator) return rows;
  const std::vector<Record> records = log_records(args.log);
  for (size_t t = 0; t < layers.size(); ++t) {
    rows.push_back(
        layer_outcome(layers[t], suite[t], outcomes[t].summary, outcomes[t].transfer_tasks));
    read_baseline(records, rows.back());
  }
  return rows;
}

// tune-suite on this process's GPU: one layer after another, each learning from the layers of
// its template already in the log (none for the first), until Ctrl-C.
std::vector<LayerOutcome> tune_layers(const SuiteArgs& args, const std::vector<SuiteLayer>& layers,
                                      std::vector<TuneTask>& tasks, const std::atomic<bool>* stop) {
  std::vector<LayerOutcome> rows;
  const double start = monotonic_seconds();
  for (size_t i = 0; i < layers.size() && !stop->load(); ++i) {
    const SuiteLayer& layer = layers[i];
    TuneTask& task = tasks[i];
    const double layer_start = monotonic_seconds();
    std::unique_ptr<Measurer> measurer = task.make_measurer(0);
    task.bind(*measurer);
    TransferSources transfer;
    if (!args.no_transfer && task.search.tuner == TunerKind::xgb)
      transfer = {.records = log_records(args.log), .featurize = task.featurize, .required = false};
    TuningSession session(task.tuning_task(), task.search, std::move(transfer));
    fmt::print(stderr, "[layer {}/{}] {} {} ({}){}\n", i + 1, layers.size(), layer.name,
               task.key.template_name, layer.description,
               session.transfer_tasks() > 0
                   ? fmt::format(", transfer from {} layer(s)", session.transfer_tasks())
                   : "");
    // The worker's start and task setup (its first reply says how that split: setup_s),
    // the transfer model's fit.
    const double setup_s = monotonic_seconds() - layer_start;
    const TuneSummary summary =
        session.run(*measurer, {args.log, LogMode::shared}, {.progress = !args.quiet, .stop = stop})
            .summary;
    measurer.reset();
    LayerOutcome out = layer_outcome(layer, task, summary, session.transfer_tasks());
    out.setup_s = setup_s;
    read_baseline(log_records(args.log), out);
    const double elapsed = monotonic_seconds() - start;
    fmt::print(stderr,
               "[suite {}/{} layers, {:.0f} s, ETA {:.0f} s] {}: tuned {} ms, {} {} ms\n", i + 1,
               layers.size(), elapsed, elapsed / double(i + 1) * double(layers.size() - i - 1),
               layer.name, out.tuned_s ? fmt::format("{:.4f}", *out.tuned_s * 1e3) : "-",
               task.tmpl ? task.tmpl->baseline().library() : "library",
               out.baseline_s ? fmt::format("{:.4f}", *out.baseline_s * 1e3) : "-");
    rows.push_back(std::move(out));
  }
  return rows;
}

void run_tune_suite(const SuiteArgs& args) {
  SearchOptions search;
  try {
    search.tuner = parse_tuner_kind(args.tuner);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  search.trials = args.trials;
  search.batch = args.batch;
  search.seed = args.seed;
  search.validate();
  const std::vector<SuiteLayer> layers = chosen_layers(named_layers(args), args.layers);
  std::vector<TuneTask> tasks = layer_tasks(args, layers, search);
  // One log for the whole suite: new, or continued with --resume (its layers' records count).
  // Checked by rank 0 alone: the others would see the file it has begun.
  if (distributed::process_rank() == 0) {
    require_writable_file(args.log, "--log");
    if (std::optional<std::string> why =
            log_problem(args.log, args.resume ? LogMode::shared : LogMode::fresh, TaskKey{}))
      throw UsageError(*why);
  }

  std::vector<LayerOutcome> rows;
  const double start = monotonic_seconds();
  InterruptGuard interrupt;
  std::string device_name, device_arch;
  if (args.device == "emulator" || distributed::process_count() > 1 || args.coordinator_only) {
    rows = tune_layers_scaled(args, search, layers, std::move(tasks));
    if (distributed::process_rank() != 0) return;
    if (!rows.empty()) {
      device_name = rows.front().key.device_name;
      device_arch = rows.front().key.target_arch;
    }
  } else {
    // Before the log is touched: without a GPU this ends the command with one line, exit 1.
    require_driver();
    const std::vector<DeviceInfo> devices = list_devices();
    if (devices.empty()) throw NoDeviceError("no CUDA device found: the driver reports none");
    device_name = devices.front().name;
    device_arch = devices.front().arch();
    rows = tune_layers(args, layers, tasks, interrupt.flag());
  }

  std::vector<std::optional<double>> baseline_s, tuned_s;
  for (const LayerOutcome& o : rows) {
    baseline_s.push_back(o.baseline_s);
    tuned_s.push_back(o.tuned_s);
  }
  const SummedTimes summed = summed_times(rows);
  const BaselineRatios ratios = baseline_ratios(baseline_s, tuned_s);
  const auto opt = [](std::optional<double> v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };

  if (args.json) {
    nlohmann::json j = {{"suite", args.model.empty() ? args.suite : args.model},
                        {"batch_size", args.batch_size},
                        {"library", library_of(rows)},
                        {"summed_baseline_s", summed.layers ? opt(summed.baseline_s) : nullptr},
                        {"summed_tuned_s", summed.layers ? opt(summed.tuned_s) : nullptr},
                        {"device", device_name},
                        {"arch", device_arch},
                        {"ranks", distributed::process_count()},
                        {"trials", args.trials},
                        {"tuner", args.tuner},
                        {"transfer", !args.no_transfer},
                        {"log", args.log},
                        {"seconds", monotonic_seconds() - start},
                        {"geomean_speedup", opt(ratios.geomean)},
                        {"median_speedup", opt(ratios.median)},
                        {"layers_with_both", ratios.counted},
                        {"layers_total", ratios.total},
                        {"layers", nlohmann::json::array()}};
    for (const LayerOutcome& o : rows) {
      j["layers"].push_back(
          {{"name", o.layer.name},
           {"op", o.key.op},
           {"template", o.key.template_name},
           {"shape", o.layer.shape},
           {"description", o.layer.description},
           {"repeat", o.layer.repeat},
           {"baseline_s", opt(o.baseline_s)},
           {"tuned_s", opt(o.tuned_s)},
           {"speedup",
            o.baseline_s && o.tuned_s ? nlohmann::json(*o.baseline_s / *o.tuned_s) : nullptr},
           {"reference", o.reference},
           {"trials", o.summary.total()},
           {"valid", o.summary.valid},
           {"transfer_tasks", o.transfer_tasks},
           {"setup_s", o.setup_s},
           {"time_split_s", time_split_json(o.summary)},
           {"best_config", o.summary.best ? o.summary.best->to_json() : nlohmann::json(nullptr)}});
    }
    print_json(j);
    return;
  }
  print_table(args.model.empty() ? args.suite : args.model, rows, ratios);
  fmt::print("log: {}\n", args.log);
  if (interrupt.flag()->load()) {
    fmt::print(stderr, "interrupted after {} of {} layers; resume with\n  {}\n", rows.size(),
               layers.size(), resume_command(""));
    throw ExitStatus{130};
  }
}

}  // namespace

void add_suite_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune-suite",
                                 "tune every layer of a network suite (resnet18, resnet50, mobilenet, mobilenet_v2) or "
                                 "every GEMM of a transformer model (llama3-8b, --model FILE) on "
                                 "the GPU and compare with cuDNN or cuBLAS");
  auto args = std::make_shared<SuiteArgs>();
  cmd->add_option("suite", args->suite,
                  "resnet18, resnet50, mobilenet, mobilenet_v2 or llama3-8b (omitted with --model)");
  cmd->add_option("--tokens", args->tokens,
                  "transformer models: the token counts M, e.g. 1,16,128 (default: "
                  "1,16,128,1024,4096)");
  cmd->add_option("--model", args->model,
                  "a model's GEMMs as JSON: {\"name\", \"repeat\", \"gemms\": [{\"name\", \"n\", "
                  "\"k\", \"dtype\", \"epilogue\"}]} (kernels/gemm_suites.h)");
  cmd->add_option("--trials", args->trials, "configurations to measure per layer")
      ->capture_default_str();
  cmd->add_option("--log", args->log, "tuning log every record is appended to")->required();
  cmd->add_option("--batch-size", args->batch_size, "network batch size, 1 to 256")
      ->capture_default_str();
  cmd->add_option("--tuner", args->tuner, "search policy: xgb, ga, random or grid")
      ->capture_default_str();
  cmd->add_option("--batch", args->batch, "configurations per measured batch")
      ->capture_default_str();
  add_seed_option(*cmd, args->seed, "search seed");
  cmd->add_option("--layers", args->layers, "only these layers, e.g. C2,C6,C9 (default: all)");
  cmd->add_option("--dtype", args->dtype,
                  "input type: fp32, or fp16 / bf16 (conv2d layers on the tensor-core NHWC "
                  "templates, against cuDNN in the same type)")
      ->capture_default_str();
  cmd->add_option("--template", args->template_name,
                  "one template for every layer, e.g. conv2d_fp16_wgmma_nhwc (default: the "
                  "operator's)");
  cmd->add_flag("--no-transfer", args->no_transfer, "do not learn from the layers already tuned");
  cmd->add_flag("--resume", args->resume,
                "count the log's records of each layer, measure only the rest");
  cmd->add_flag("--quiet", args->quiet, "no live progress line per layer");
  cmd->add_option("--device", args->device,
                  "gpu, or emulator: run each candidate in the CPU emulator (correctness only; "
                  "its times are emulator wall times, not GPU times)")
      ->capture_default_str();
  cmd->add_flag("--coordinator-only", args->coordinator_only,
                "under mpirun: rank 0 searches and logs but does not measure");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->callback([args] {
    if (args->suite.empty() == args->model.empty())
      throw UsageError(
          "name a suite (resnet18, resnet50, mobilenet, mobilenet_v2, llama3-8b) or give --model "
          "FILE");
    if (args->device != "gpu" && args->device != "emulator")
      throw UsageError(fmt::format("--device must be gpu or emulator (got '{}')", args->device));
    run_tune_suite(*args);
  });
}

}  // namespace cutune::cli
