// cutune tune over several tasks or ranks: a replay suite (several caches searched at once) and
// MPI jobs (src/distributed), which every rank runs; only rank 0 prints. Each task comes from
// the one resolver (tune_task.h) and runs through the suite engine (suite_tasks.h).

#include <fmt/format.h>

#include "src/cli/cli_common.h"
#include "src/cli/cmd_tune.h"
#include "src/cli/suite_tasks.h"
#include "src/cli/tune_task.h"
#include "src/distributed/suite_runner.h"
#include "src/records/tuning_log.h"
#include "src/tune/tuning_session.h"

namespace cutune::cli {

// Several caches, or an MPI job, searched at once into one log. Rank 0 owns the search: up to
// --concurrent-tasks tuning loops at once; every other rank measures what it is sent, each
// cache loaded on every rank (candidates travel as configuration indices). A task's records
// depend only on the seed and its results in proposal order, never on how many ranks measured
// them; with transfer, a task learns from the earlier caches of its kernel by the fixed rule of
// suite_runner.h. Records are appended as results arrive, so an aborted job loses at most the
// candidates in flight; --resume continues each task from the log.
void run_tune_scaled(const TuneArgs& args) {
  const SearchOptions search = args.search.options();
  if (args.resume && args.log.empty()) throw UsageError("--resume needs --log FILE");
  if (!args.source.op.op.empty() || !args.source.op.shape.empty() ||
      !args.source.replay.spec.empty())
    throw UsageError(
        "a replay suite takes operators and shapes from its caches; drop OP/--shape/--spec");
  if (!args.transfer_from.empty() && search.tuner != TunerKind::xgb)
    throw UsageError(fmt::format("--transfer-from needs --tuner xgb (got {})", args.search.tuner));
  if (args.replays.empty()) throw UsageError("under mpirun, tune needs --replay CACHE...");
  std::vector<TuneTask> tasks;
  for (size_t i = 0; i < args.replays.size(); ++i) {
    TaskSource source = args.source;
    source.replay.cache = args.replays[i];
    // The noise seed is per task, so that a lane's draws do not depend on the other tasks it
    // served.
    MeasureChoice measure = args.measure;
    measure.noise_seed = search.seed + uint64_t(i);
    tasks.push_back(resolve_tune_task(source, measure, search));
  }
  SuiteTasks suite(std::move(tasks), args.coordinator_only);
  distributed::SuiteOptions o;
  o.tune = suite[0].search.tune_options();
  o.tune.log = args.log;
  o.tune.resume = args.resume;
  o.tune.progress = !args.quiet;
  o.make_policy = search.policy_factory();
  o.transfer = search.tuner == TunerKind::xgb && !args.no_transfer;
  if (distributed::process_rank() == 0)  // every task learns from these too (rank 0 searches)
    o.transfer_records = read_transfer_sources(as_paths(args.transfer_from));
  o.coordinator_only = args.coordinator_only;
  o.concurrent_tasks = args.concurrent_tasks;
  // The cache's time of the best found (0 when none) and its optimum.
  const auto best_ms = [&](size_t t, const TuneSummary& s) {
    return s.best ? suite[t].replay->find(*s.best)->time_ms : 0.0;
  };
  const auto optimum_ms = [&](size_t t) { return suite[t].replay->summary().best_time_ms; };
  const std::vector<distributed::SuiteOutcome> results =
      suite.run(o, [&](size_t t, const distributed::SuiteOutcome& out, int finished) {
        if (args.quiet) return;
        const double best = best_ms(t, out.summary);
        fmt::print(stderr, "[{}/{}] {}: {} trials, best {:.4g} ms ({:.1f}% of the optimum){}\n",
                   finished, suite.size(), suite[t].key.to_string(), out.summary.total(), best,
                   best > 0 ? 100.0 * optimum_ms(t) / best : 0.0,
                   out.transfer_tasks > 0
                       ? fmt::format(", transfer from {} cache(s)", out.transfer_tasks)
                       : "");
      });
  if (distributed::process_rank() != 0) return;
  nlohmann::json all = nlohmann::json::array();
  for (size_t t = 0; t < results.size(); ++t) {
    const TaskKey& key = suite[t].key;
    const TuneSummary& s = results[t].summary;
    if (args.search.json) {
      nlohmann::json j = summary_json(key, s, args.log, std::nullopt);
      j["optimum_ms"] = optimum_ms(t);
      j["best_ms"] = best_ms(t, s);
      j["transfer_tasks"] = results[t].transfer_tasks;
      all.push_back(std::move(j));
    } else {
      print_summary(key, s, args.log, std::nullopt);
    }
  }
  if (args.search.json) print_json({{"tasks", all}, {"ranks", distributed::process_count()}});
}

// `mpirun -n R cutune tune OP --shape ...`: one task whose candidates every rank builds and
// measures with measurers of its own (its GPUs, or the emulator), through the suite engine
// (src/distributed/suite_runner.h). Rank 0 names the task after its own measurer, so it needs
// a GPU of the kind even with --coordinator-only; a rank whose GPU is of another kind refuses.
void run_tune_operator_scaled(const TuneArgs& args) {
  if (!args.source.replay.spec.empty())
    throw UsageError("under mpirun, tune measures operators (OP --shape) or caches (--replay)");
  if (!args.transfer_from.empty() && args.search.options().tuner != TunerKind::xgb)
    throw UsageError(fmt::format("--transfer-from needs --tuner xgb (got {})", args.search.tuner));
  if (!args.log.empty() && distributed::process_rank() == 0)
    require_writable_file(args.log, "--log");
  std::vector<TuneTask> one;
  one.push_back(resolve_tune_task(args));
  SuiteTasks suite(std::move(one), args.coordinator_only);
  const TuneTask& t = suite[0];
  const std::string log = args.log.empty() ? default_log(t.key) : args.log;
  const LogMode mode = args.resume ? LogMode::resume : LogMode::fresh;
  if (distributed::process_rank() == 0) {
    if (std::optional<std::string> why = log_problem(log, mode, t.key)) throw UsageError(*why);
    if (args.log.empty())
      fmt::print(stderr, "records go to {} (name another file with --log)\n", log);
    if (!t.note().empty()) fmt::print(stderr, "{}\n", t.note());
  }
  distributed::SuiteOptions o;
  o.tune = t.search.tune_options();
  o.tune.log = log;
  o.tune.resume = args.resume;
  o.tune.exclusive_log = true;
  o.tune.progress = !args.quiet;
  o.make_policy = t.search.policy_factory();
  o.coordinator_only = args.coordinator_only;
  if (distributed::process_rank() == 0) {
    o.transfer_records = read_transfer_sources(as_paths(args.transfer_from));
    if (!o.transfer_records.empty())
      fmt::print(stderr, "transfer: {} records from --transfer-from\n", o.transfer_records.size());
  }
  const std::vector<distributed::SuiteOutcome> out = suite.run(o);
  if (distributed::process_rank() != 0) return;
  const TuneSummary& s = out.at(0).summary;
  if (args.search.json) {
    nlohmann::json j = summary_json(t.key, s, log, t.flops);
    j["ranks"] = distributed::process_count();
    print_json(j);
  } else {
    print_summary(t.key, s, log, t.flops);
    if (s.remeasured > 0)
      fmt::print("best chosen on a re-measurement of the {} fastest ({} rounds, interleaved)\n",
                 s.remeasured, t.search.remeasure_rounds);
  }
}

}  // namespace cutune::cli
