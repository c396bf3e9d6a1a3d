// cutune tune | replay: the tuning engine's commands.

#include <cmath>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "cost_model/features.h"
#include "src/cli/cli_common.h"
#include "src/distributed/replay_suite.h"
#include "src/records/tuning_log.h"
#include "src/replay/kt_cache.h"
#include "src/replay/t1_spec.h"
#include "src/measure/device_selection.h"
#include "src/measure/gpu_measurer.h"
#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/replay_study.h"
#include "src/tune/tuner.h"

namespace cutune::cli {

namespace {

struct SearchArgs {
  std::string tuner = "xgb";
  int trials = 200;
  int batch = 64;
  uint64_t seed = 0;
  std::string objective = "pairwise";
  bool diversity = false;
  double epsilon = ModelPolicyOptions{}.epsilon;
  std::string acquisition{to_string(ModelPolicyOptions{}.acquisition)};
  int ensemble = ModelPolicyOptions{}.ensemble;
  double kappa = ModelPolicyOptions{}.kappa;
  bool json = false;

  void add_to(CLI::App& cmd) {
    cmd.add_option("--tuner", tuner, "search policy: xgb, ga, random or grid")->capture_default_str();
    cmd.add_option("--trials", trials, "configurations to measure")->capture_default_str();
    cmd.add_option("--batch", batch, "configurations per batch (and per model refit)")
        ->capture_default_str();
    cmd.add_option("--seed", seed, "search seed")->capture_default_str();
    cmd.add_option("--objective", objective, "xgb model objective: pairwise or regression")
        ->capture_default_str();
    cmd.add_flag("--diversity", diversity, "xgb: diversity-aware choice of each batch");
    cmd.add_option("--epsilon", epsilon, "xgb: share of each batch drawn at random")
        ->capture_default_str();
    cmd.add_option("--acquisition", acquisition,
                   "xgb: what annealing maximises: mean (one model), ucb (ensemble mean + "
                   "kappa * spread) or thompson (one ensemble member per slot)")
        ->capture_default_str();
    cmd.add_option("--ensemble", ensemble, "xgb, ucb/thompson: boosters on bootstrap resamples")
        ->capture_default_str();
    cmd.add_option("--kappa", kappa, "xgb, ucb: weight of the ensemble's spread")
        ->capture_default_str();
    cmd.add_flag("--json", json, "machine-readable output");
  }

  ModelPolicyOptions model_options() const {
    ModelPolicyOptions o;
    o.plan_size = batch;
    o.diversity = diversity;
    o.epsilon = epsilon;
    o.ensemble = ensemble;
    o.kappa = kappa;
    try {
      o.acquisition = parse_acquisition(acquisition);
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("--acquisition: {}", e.what()));
    }
    if (objective == "regression") {
      o.model.objective = cost_model::RankObjective::regression;
    } else if (objective != "pairwise") {
      throw UsageError(fmt::format("unknown --objective '{}' (expected pairwise or regression)",
                                   objective));
    }
    return o;
  }

  void check() const {
    if (trials < 1) throw UsageError("--trials must be >= 1");
    if (batch < 1) throw UsageError("--batch must be >= 1");
    if (!(epsilon >= 0 && epsilon <= 1)) throw UsageError("--epsilon must be in [0, 1]");
    if (ensemble < 2 || ensemble > 32) throw UsageError("--ensemble must be in [2, 32]");
    if (!(kappa >= 0)) throw UsageError("--kappa must be >= 0");
    parse_tuner_kind(tuner);
    model_options();
  }
};

struct ReplaySource {
  std::string cache;
  std::string spec;
  bool noise = false;

  replay::ReplayTask load() const {
    replay::KtCache c = replay::load_kt_cache(cache);
    if (spec.empty()) return replay::ReplayTask::from_cache(std::move(c));
    return replay::ReplayTask::from_spec(std::move(c), replay::load_t1_spec(spec));
  }
};

struct TuneArgs {
  std::string op, shape, template_name, arch;
  SearchArgs search;
  std::string log;
  bool resume = false;
  std::vector<std::string> transfer_from;
  ReplaySource replay;
  bool quiet = false;
  std::string devices;  // --devices: all, or GPU ordinals (src/measure/device_selection.h)
  std::vector<std::string> replays;  // --replay: one cache, or several (a replay suite)
  double replay_cost_ms = 0;
  bool coordinator_only = false;
  int concurrent_tasks = 0;
};

// A Kernel Tuner cache (gzip, or one JSON document whose first line is not a record) rather
// than a tuning log (JSON lines, each with a "task").
bool is_kt_cache(const std::string& path) {
  if (path.ends_with(".gz")) return true;
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first)) return false;  // read_log reports the problem
  nlohmann::json j = nlohmann::json::parse(first, nullptr, /*allow_exceptions=*/false);
  return !(j.is_object() && j.contains("task"));
}

// The records of tuning logs, and of Kernel Tuner caches (every entry a record of the cache's
// task: a cache is a complete log of it).
std::vector<Record> read_transfer_sources(const std::vector<std::string>& paths) {
  std::vector<Record> all;
  for (const std::string& p : paths) {
    if (is_kt_cache(p)) {
      std::vector<Record> r =
          cache_records(replay::ReplayTask::from_cache(replay::load_kt_cache(p)));
      all.insert(all.end(), r.begin(), r.end());
      continue;
    }
    LogReadResult r = read_log(p);
    for (const std::string& w : r.warnings) fmt::print(stderr, "cutune: warning: {}\n", w);
    all.insert(all.end(), r.records.begin(), r.records.end());
  }
  return all;
}

// Places a record of another task in a replayed space by its knob values; records with a
// knob or value the space lacks are skipped.
RecordFeaturizer replay_featurizer(const ConfigSpace& space,
                                   const cost_model::FeatureExtractor& features) {
  return [&space, &features](const Record& r, std::span<float> out) {
    try {
      features.extract(space.from_json(nlohmann::json{{"knobs", r.knobs}}), out);
      return true;
    } catch (const ConfigError&) {
      return false;
    }
  };
}

std::shared_ptr<const TransferModel> train_transfer(const std::vector<Record>& records,
                                                    const TaskKey& own,
                                                    const cost_model::FeatureExtractor& features,
                                                    const RecordFeaturizer& featurize) {
  auto t = std::make_shared<TransferModel>(TransferModel::train(
      records, own, featurize, features.size(), features.schema()));
  fmt::print(stderr, "transfer: global model on {} records of {} other task(s)\n", t->rows(),
             t->tasks());
  return t;
}

nlohmann::json summary_json(const TaskKey& task, const TuneSummary& s, const std::string& log,
                            std::optional<double> flops) {
  nlohmann::json best = nullptr;
  if (s.best) {
    best = {{"config", s.best->to_json()}, {"time_ms", s.best_s * 1e3}};
    if (flops) best["gflops"] = *flops / s.best_s * 1e-9;
  }
  return {{"task", task.to_string()}, {"trials", s.total()},   {"resumed", s.resumed},
          {"measured", s.measured},   {"valid", s.valid},      {"exhausted", s.exhausted},
          {"best", best},             {"seconds", s.seconds},  {"log", log}};
}

void print_summary(const TaskKey& task, const TuneSummary& s, const std::string& log,
                   std::optional<double> flops) {
  fmt::print("{}: {} trials ({} resumed, {} measured), {} valid, {:.1f} s{}\n", task.to_string(),
             s.total(), s.resumed, s.measured, s.valid, s.seconds,
             s.exhausted ? " (space exhausted)" : "");
  if (!s.best) {
    fmt::print("no valid configuration found\n");
    return;
  }
  std::string rate = flops ? fmt::format(" ({:.0f} GFLOP/s)", *flops / s.best_s * 1e-9) : "";
  fmt::print("best: {:.4g} ms{}  config {}: {}\n", s.best_s * 1e3, rate, s.best->index(),
             s.best->to_string());
  if (!log.empty()) fmt::print("log: {}\n", log);
}

void run_tune(const TuneArgs& args) {
  args.search.check();
  if (args.resume && args.log.empty()) throw UsageError("--resume needs --log FILE");
  TunerKind kind = parse_tuner_kind(args.search.tuner);
  ModelPolicyOptions model = args.search.model_options();
  TuneOptions options;
  options.trials = args.search.trials;
  options.batch = args.search.batch;
  options.log = args.log;
  options.resume = args.resume;
  options.seed = args.search.seed;
  options.progress = !args.quiet;
  std::vector<Record> transfer_records = read_transfer_sources(args.transfer_from);

  if (!args.replay.cache.empty()) {
    if (!args.op.empty() || !args.shape.empty()) {
      throw UsageError("--replay takes the operator and shape from the cache; drop OP/--shape");
    }
    replay::ReplayTask task = args.replay.load();
    const ConfigSpace& space = task.space();
    TaskKey key = replay_task_key(task);
    auto features = cost_model::make_knob_features(space);
    if (!transfer_records.empty()) {
      model.transfer = train_transfer(transfer_records, key, *features,
                                      replay_featurizer(space, *features));
    }
    ReplayMeasurerAdapter measurer(task, args.replay.noise, args.search.seed,
                                   args.replay_cost_ms);
    auto policy = make_search_policy(kind, space, features.get(), model);
    TuneSummary s = Tuner(space, measurer, *policy, key, options).run();
    if (args.search.json) {
      nlohmann::json j = summary_json(key, s, args.log, std::nullopt);
      j["optimum_ms"] = task.summary().best_time_ms;
      print_json(j);
    } else {
      print_summary(key, s, args.log, std::nullopt);
      if (s.best) {
        fmt::print("optimum of the cache: {:.4g} ms; best found is {:.1f}% of it\n",
                   task.summary().best_time_ms,
                   100.0 * task.summary().best_time_ms / task.find(*s.best)->time_ms);
      }
    }
    return;
  }

  if (args.op.empty() || args.shape.empty()) {
    throw UsageError("tune needs OP and --shape (or --replay CACHE)");
  }
  if (distributed::process_count() > 1)
    throw UsageError("under mpirun, tune measures replayed caches (--replay) only for now");
  TaskOptions task_options;
  task_options.op = args.op;
  task_options.shape = args.shape;
  task_options.template_name = args.template_name;
  task_options.arch = args.arch;
  auto tmpl = task_options.make();
  ir::TargetLimits limits = task_options.limits();
  auto features = cost_model::make_ir_features(*tmpl, limits);
  GpuMeasureOptions gpu;
  gpu.arch = args.arch;
  gpu.devices = select_devices(args.devices, list_devices(), args.arch);
  // Before the log is touched: without a GPU this ends the command, leaving no file behind.
  std::unique_ptr<Measurer> measurer = make_gpu_measurer(*tmpl, gpu);
  TaskKey key;
  key.op = tmpl->op();
  key.shape = tmpl->shape();
  key.target_arch = measurer->target_arch();
  key.device_name = measurer->device_name();
  key.template_name = tmpl->name();
  if (!transfer_records.empty()) {
    model.transfer = train_transfer(transfer_records, key, *features,
                                    template_featurizer(key, *features, limits));
  }
  options.flops = tmpl->flops();
  auto policy = make_search_policy(kind, tmpl->space(), features.get(), model);
  TuneSummary s = Tuner(tmpl->space(), *measurer, *policy, key, options).run();
  if (args.search.json) {
    print_json(summary_json(key, s, args.log, options.flops));
  } else {
    print_summary(key, s, args.log, options.flops);
  }
}

// Several caches, or an MPI job: src/distributed/replay_suite.h. Every rank runs this; only
// rank 0 prints.
void run_tune_scaled(const TuneArgs& args) {
  args.search.check();
  if (args.resume && args.log.empty()) throw UsageError("--resume needs --log FILE");
  if (!args.op.empty() || !args.shape.empty() || !args.replay.spec.empty())
    throw UsageError("a replay suite takes operators and shapes from its caches; drop OP/--shape/--spec");
  if (!args.transfer_from.empty())
    throw UsageError("--transfer-from is not supported for replay suites yet");
  if (args.replays.empty()) throw UsageError("under mpirun, tune needs --replay CACHE...");
  const TunerKind kind = parse_tuner_kind(args.search.tuner);
  const ModelPolicyOptions model = args.search.model_options();
  distributed::ReplaySuiteOptions o;
  o.caches = args.replays;
  o.tune.trials = args.search.trials;
  o.tune.batch = args.search.batch;
  o.tune.log = args.log;
  o.tune.resume = args.resume;
  o.tune.seed = args.search.seed;
  o.tune.progress = !args.quiet;
  o.make_policy = [kind, model](const ConfigSpace& space, const cost_model::FeatureExtractor* f) {
    return make_search_policy(kind, space, f, model);
  };
  o.noise = args.replay.noise;
  o.cost_ms = args.replay_cost_ms;
  o.coordinator_only = args.coordinator_only;
  o.concurrent_tasks = args.concurrent_tasks;
  const std::vector<distributed::SuiteTaskResult> results = distributed::run_replay_suite(o);
  if (distributed::process_rank() != 0) return;
  nlohmann::json all = nlohmann::json::array();
  for (const distributed::SuiteTaskResult& r : results) {
    if (args.search.json) {
      nlohmann::json j = summary_json(r.key, r.summary, args.log, std::nullopt);
      j["optimum_ms"] = r.optimum_ms;
      all.push_back(std::move(j));
    } else {
      print_summary(r.key, r.summary, args.log, std::nullopt);
    }
  }
  if (args.search.json)
    print_json({{"tasks", all}, {"ranks", distributed::process_count()}});
}

struct ReplayArgs {
  ReplaySource source;
  SearchArgs search;
  std::vector<std::string> transfer_from;
  int seeds = 10;
  int threads = 1;
};

void run_replay(const ReplayArgs& args) {
  args.search.check();
  if (args.seeds < 1) throw UsageError("--seeds must be >= 1");
  if (args.threads < 1) throw UsageError("--threads must be >= 1");
  TunerKind kind = parse_tuner_kind(args.search.tuner);
  ModelPolicyOptions model = args.search.model_options();
  replay::ReplayTask task = args.source.load();
  auto features = cost_model::make_knob_features(task.space());
  if (!args.transfer_from.empty()) {
    model.transfer = train_transfer(read_transfer_sources(args.transfer_from),
                                    replay_task_key(task), *features,
                                    replay_featurizer(task.space(), *features));
  }
  StudyOptions o;
  o.trials = args.search.trials;
  o.seeds = args.seeds;
  o.batch = args.search.batch;
  o.noise = args.source.noise;
  o.threads = args.threads;
  o.first_seed = args.search.seed;
  StudyResult r = run_replay_study(
      task, [&] { return make_search_policy(kind, task.space(), features.get(), model); }, o,
      [](int done, int total) { fmt::print(stderr, "seed {}/{}\n", done, total); });

  std::vector<int> budgets;
  for (int b : {25, 50, 100, 200, 400}) {
    if (b < o.trials) budgets.push_back(b);
  }
  budgets.push_back(o.trials);
  const double thresholds[] = {0.90, 0.95, 0.99};
  if (args.search.json) {
    nlohmann::json j;
    j["cache"] = args.source.cache;
    j["tuner"] = args.search.tuner;
    j["seeds"] = o.seeds;
    j["optimum_ms"] = r.optimum_ms;
    j["budgets"] = nlohmann::json::array();
    for (int b : budgets) {
      j["budgets"].push_back({{"trials", b},
                              {"median_best_over_optimum", r.median_ratio_at(b)},
                              {"random_expected", expected_random_ratio(task, b)}});
    }
    for (double f : thresholds) {
      std::optional<double> t = r.median_trials_to(f);
      std::string name = fmt::format("{:.2f}", f);
      j["median_trials_to"][name] = t ? nlohmann::json(*t) : nlohmann::json(nullptr);
      j["random_expected_trials_to"][name] = expected_random_trials_to(task, f);
    }
    j["seconds"] = r.seconds;
    print_json(j);
    return;
  }
  fmt::print("{} on {} ({}), optimum {:.4g} ms; {} seeds, batch {}\n", args.search.tuner,
             task.cache().kernel_name, task.cache().device_name, r.optimum_ms, o.seeds, o.batch);
  fmt::print("{:>8}  {:>14}  {:>16}\n", "trials", "median best/opt", "random expected");
  for (int b : budgets) {
    fmt::print("{:>8}  {:>14.3f}  {:>16.3f}\n", b, r.median_ratio_at(b),
               expected_random_ratio(task, b));
  }
  for (double f : thresholds) {
    std::optional<double> t = r.median_trials_to(f);
    fmt::print("median trials to {:.0f}%: {} (random expects {:.0f})\n", f * 100,
               t ? fmt::format("{:.0f}", *t) : std::string("not reached"),
               expected_random_trials_to(task, f));
  }
}

}  // namespace

void add_tune_commands(CLI::App& app) {
  auto* tune = app.add_subcommand("tune", "tune an operator on the GPU, or replay a cache");
  auto targs = std::make_shared<TuneArgs>();
  tune->add_option("op", targs->op, "operator (see `cutune ops`); omitted with --replay");
  tune->add_option("--shape", targs->shape, "problem shape, e.g. 1024,1024,1024 for gemm M,N,K");
  tune->add_option("--template", targs->template_name, "schedule template (default: the first)");
  tune->add_option("--arch", targs->arch, "target architecture (default: the GPU's)");
  targs->search.add_to(*tune);
  tune->add_option("--log", targs->log, "tuning log to append every record to");
  tune->add_flag("--resume", targs->resume, "continue the log without re-measuring");
  tune->add_option("--transfer-from", targs->transfer_from,
                   "logs of other tasks of the same template (with --replay, also Kernel "
                   "Tuner caches of the same space), for transfer learning")
      ->expected(1, -1);
  tune->add_option("--replay", targs->replays,
                   "measure from a Kernel Tuner cache instead; several caches tune a replay "
                   "suite (tasks searched at once, one log)")
      ->expected(1, -1);
  tune->add_option("--replay-cost-ms", targs->replay_cost_ms,
                   "with --replay: each answer takes this long on the measuring rank (a sleep), "
                   "to study scaling without GPUs");
  tune->add_flag("--coordinator-only", targs->coordinator_only,
                 "under mpirun: rank 0 searches and logs but does not measure");
  tune->add_option("--concurrent-tasks", targs->concurrent_tasks,
                   "replay suite: tasks searched at once (default: all)");
  tune->add_option("--spec", targs->replay.spec, "with --replay: the T1 space specification");
  tune->add_flag("--noise", targs->replay.noise, "with --replay: answer with one drawn repetition");
  tune->add_flag("--quiet", targs->quiet, "no progress line");
  tune->add_option("--devices", targs->devices,
                   "GPUs to measure on, one worker each: all (default: every GPU of the task's "
                   "kind) or ordinals, e.g. 0,2");
  tune->callback([targs] {
    if (!(targs->replay_cost_ms >= 0 && targs->replay_cost_ms < 1e6))
      throw UsageError("--replay-cost-ms must be in [0, 1e6)");
    if (targs->replay_cost_ms > 0 && targs->replays.empty())
      throw UsageError("--replay-cost-ms needs --replay CACHE");
    if (targs->concurrent_tasks < 0) throw UsageError("--concurrent-tasks must be >= 0");
    if (targs->replays.size() > 1 || distributed::process_count() > 1 || targs->coordinator_only)
      return run_tune_scaled(*targs);
    if (!targs->replays.empty()) targs->replay.cache = targs->replays.front();
    run_tune(*targs);
  });

  auto* rep = app.add_subcommand("replay", "measure a tuner's efficiency on a replayed cache");
  auto rargs = std::make_shared<ReplayArgs>();
  rep->add_option("--cache", rargs->source.cache, "Kernel Tuner cache (.json or .json.gz)")
      ->required();
  rep->add_option("--spec", rargs->source.spec, "T1 space specification");
  rep->add_flag("--noise", rargs->source.noise, "answer with one drawn repetition");
  rargs->search.add_to(*rep);
  rargs->search.batch = 32;
  rep->add_option("--transfer-from", rargs->transfer_from,
                  "xgb: Kernel Tuner caches or tuning logs of the same space on other GPUs "
                  "(or other tasks), to train the global model of transfer learning")
      ->expected(1, -1);
  rep->add_option("--seeds", rargs->seeds, "seeds to run")->capture_default_str();
  rep->add_option("--threads", rargs->threads, "seeds run in parallel")->capture_default_str();
  rep->callback([rargs] { run_replay(*rargs); });
}

}  // namespace cutune::cli
