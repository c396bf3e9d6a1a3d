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
#include "src/cli/tune_task.h"
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
  if (!args.replay.spec.empty())
    throw UsageError("under mpirun, tune measures operators (OP --shape) or caches (--replay)");
  if (!args.transfer_from.empty() && args.search.options().tuner != TunerKind::xgb)
    throw UsageError(fmt::format("--transfer-from needs --tuner xgb (got {})", args.search.tuner));
  if (!args.log.empty() && distributed::process_rank() == 0)
    require_writable_file(args.log, "--log");
  TuneTask t = resolve_tune_task(args);
  const SearchOptions& search = t.search;
  distributed::SuiteTask task;
  task.key.op = t.tmpl->op();  // the rest once rank 0's measurer names the device
  task.key.shape = t.tmpl->shape();
  task.key.template_name = t.tmpl->name();
  std::unique_ptr<Measurer> first;  // rank 0's, made before anything else: it names the task
  if (distributed::process_rank() == 0) {
    first = t.make_measurer(0);
    t.bind(*first);
    task.key = t.key;
    task.features = t.features.get();
    task.featurize = t.featurize;
    if (args.coordinator_only) first.reset();  // its GPU workers would sit idle
  }
  task.space = &t.space();
  task.flops = t.flops;
  const std::string log = args.log.empty() ? default_log(task.key) : args.log;
  const LogMode mode = args.resume ? LogMode::resume : LogMode::fresh;
  if (distributed::process_rank() == 0) {
    if (std::optional<std::string> why = log_problem(log, mode, task.key)) throw UsageError(*why);
    if (args.log.empty())
      fmt::print(stderr, "records go to {} (name another file with --log)\n", log);
    if (!t.note().empty()) fmt::print(stderr, "{}\n", t.note());
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
  // Rank 0's lane measures with the measurer made above; each other lane makes its own (each
  // rank picks among its own GPUs when it first measures).
  distributed::MeasurerFactory lanes = [&](int lane) -> std::unique_ptr<Measurer> {
    if (first) return std::move(first);
    return t.make_measurer(lane);
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
