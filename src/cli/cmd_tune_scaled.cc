// cutune tune over several tasks or ranks: a replay suite (several caches searched at once) and
// MPI jobs (src/distributed), which every rank runs; only rank 0 prints.

#include "src/cli/cmd_tune.h"

#include <cctype>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>

#include <fmt/format.h>

#include "cost_model/features.h"
#include "src/cli/cli_common.h"
#include "src/distributed/replay_suite.h"
#include "src/distributed/suite_runner.h"
#include "src/measure/device_selection.h"
#include "src/measure/emulator_measurer.h"
#include "src/measure/gpu_measurer.h"
#include "src/measure/worker_process.h"
#include "src/records/tuning_log.h"
#include "src/replay/kt_cache.h"
#include "src/replay/t1_spec.h"
#include "src/runtime/driver_api.h"
#include "src/spec/spec_kernel_task.h"
#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/replay_study.h"
#include "src/tune/tuning_session.h"

namespace cutune::cli {

// Several caches, or an MPI job: src/distributed/replay_suite.h. Every rank runs this; only
// rank 0 prints.
void run_tune_scaled(const TuneArgs& args) {
  const SearchOptions search = args.search.options();
  if (args.resume && args.log.empty()) throw UsageError("--resume needs --log FILE");
  if (!args.task.op.empty() || !args.task.shape.empty() || !args.replay.spec.empty())
    throw UsageError(
        "a replay suite takes operators and shapes from its caches; drop OP/--shape/--spec");
  if (!args.transfer_from.empty() && search.tuner != TunerKind::xgb)
    throw UsageError(fmt::format("--transfer-from needs --tuner xgb (got {})", args.search.tuner));
  if (args.replays.empty()) throw UsageError("under mpirun, tune needs --replay CACHE...");
  distributed::ReplaySuiteOptions o;
  o.caches = args.replays;
  o.tune = search.tune_options();
  o.tune.log = args.log;
  o.tune.resume = args.resume;
  o.tune.progress = !args.quiet;
  o.make_policy = search.policy_factory();
  o.transfer = search.tuner == TunerKind::xgb && !args.no_transfer;
  if (distributed::process_rank() == 0)  // every task learns from these too (rank 0 searches)
    o.transfer_records = read_transfer_sources(as_paths(args.transfer_from));
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
      j["best_ms"] = r.best_ms;
      j["transfer_tasks"] = r.transfer_tasks;
      all.push_back(std::move(j));
    } else {
      print_summary(r.key, r.summary, args.log, std::nullopt);
    }
  }
  if (args.search.json) print_json({{"tasks", all}, {"ranks", distributed::process_count()}});
}

// `mpirun -n R cutune tune OP --shape ...`: one task whose candidates every rank builds and
// measures with measurers of its own (its GPUs, or the emulator), through the suite engine
// (src/distributed/suite_runner.h). Rank 0 names the task after its own measurer, so it needs
// a GPU of the kind even with --coordinator-only; a rank whose GPU is of another kind refuses.
void run_tune_operator_scaled(const TuneArgs& args) {
  SearchOptions search = args.search.options();
  search.remeasure_rounds = args.remeasure_rounds;
  if (!args.transfer_from.empty() && search.tuner != TunerKind::xgb)
    throw UsageError(fmt::format("--transfer-from needs --tuner xgb (got {})", args.search.tuner));
  if (!args.replay.spec.empty())
    throw UsageError("under mpirun, tune measures operators (OP --shape) or caches (--replay)");
  if (args.task.op.empty() || args.task.shape.empty()) throw UsageError("tune needs OP and --shape");
  if (!args.log.empty() && distributed::process_rank() == 0)
    require_writable_file(args.log, "--log");
  TaskOptions task_options = args.task;
  const std::unique_ptr<Template> tmpl = task_options.make();
  const bool emulated = args.device == "emulator";
  distributed::MeasurerFactory factory;
  std::unique_ptr<Measurer> first;  // rank 0's, made before anything else: it names the task
  if (emulated) {
    if (!args.devices.empty())
      throw UsageError("--devices names GPUs; drop it with --device emulator");
    EmulatorMeasureOptions emulated_options;
    emulated_options.limits = task_options.limits();
    require_arch_supports(*tmpl, emulated_options.limits.arch);
    factory = [&tmpl, emulated_options](int) {
      return make_emulator_measurer(*tmpl, emulated_options);
    };
    search.remeasure_top = args.remeasure_top < 0 ? 0 : args.remeasure_top;
  } else {
    // Each rank picks among its own GPUs, when it first measures (rank 0: at once).
    factory = [&tmpl, &args](int) {
      GpuMeasureOptions gpu;
      gpu.arch = args.task.arch;
      gpu.devices = select_devices(args.devices, list_devices(), args.task.arch);
      return make_gpu_measurer(*tmpl, gpu);
    };
    search.remeasure_top = args.remeasure_top < 0 ? 8 : args.remeasure_top;
    search.pipeline = !args.no_pipeline;
    if (search.tuner == TunerKind::xgb) search.seed_configs = tmpl->reference_configs();
  }
  distributed::SuiteTask task;
  task.key.op = tmpl->op();
  task.key.shape = tmpl->shape();
  task.key.template_name = tmpl->name();
  std::unique_ptr<cost_model::FeatureExtractor> features;
  if (distributed::process_rank() == 0) {
    try {
      first = factory(0);
    } catch (const NoDeviceError& e) {
      throw NoDeviceError(fmt::format(
          "{}; under mpirun without GPUs: --device emulator, or --replay CACHE...", e.what()));
    }
    require_arch_supports(*tmpl, first->target_arch());
    task.key.target_arch = first->target_arch();
    task.key.device_name = first->device_name();
    task_options.arch = first->target_arch();
    const ir::TargetLimits limits = task_options.limits();
    features = cost_model::make_ir_features(*tmpl, limits);
    task.featurize = template_featurizer(*features, limits);
    if (args.coordinator_only) first.reset();  // its GPU workers would sit idle
  }
  task.space = &tmpl->space();
  task.features = features.get();
  task.flops = tmpl->flops();
  const std::string log = args.log.empty() ? default_log(task.key) : args.log;
  const LogMode mode = args.resume ? LogMode::resume : LogMode::fresh;
  if (distributed::process_rank() == 0) {
    if (std::optional<std::string> why = log_problem(log, mode, task.key)) throw UsageError(*why);
    if (args.log.empty())
      fmt::print(stderr, "records go to {} (name another file with --log)\n", log);
    if (emulated)
      fmt::print(stderr,
                 "measuring in the CPU emulator: correctness only; its times are "
                 "emulator wall times, not GPU times\n");
  }
  distributed::SuiteOptions o;
  o.tune = search.tune_options();
  o.tune.log = log;
  o.tune.resume = args.resume;
  o.tune.exclusive_log = true;
  o.tune.progress = !args.quiet;
  o.make_policy = search.policy_factory();
  o.coordinator_only = args.coordinator_only;
  if (distributed::process_rank() == 0) {
    o.transfer_records = read_transfer_sources(as_paths(args.transfer_from));
    if (!o.transfer_records.empty())
      fmt::print(stderr, "transfer: {} records from --transfer-from\n", o.transfer_records.size());
  }
  // Rank 0's lane measures with the measurer made above.
  distributed::MeasurerFactory lanes = [&](int t) -> std::unique_ptr<Measurer> {
    if (first) return std::move(first);
    return factory(t);
  };
  const std::vector<distributed::SuiteOutcome> out = distributed::run_suite({task}, lanes, o);
  if (distributed::process_rank() != 0) return;
  const TuneSummary& s = out.at(0).summary;
  if (args.search.json) {
    nlohmann::json j = summary_json(task.key, s, log, task.flops);
    j["ranks"] = distributed::process_count();
    print_json(j);
  } else {
    print_summary(task.key, s, log, task.flops);
    if (s.remeasured > 0)
      fmt::print("best chosen on a re-measurement of the {} fastest ({} rounds, interleaved)\n",
                 s.remeasured, search.remeasure_rounds);
  }
}

}  // namespace cutune::cli
