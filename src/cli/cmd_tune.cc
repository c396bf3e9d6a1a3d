// cutune tune: one task in this process, measured on the GPU, the emulator or a replayed cache
// (src/tune/tuning_session.h); replay suites and MPI jobs are cmd_tune_scaled.cc, `cutune
// replay` cmd_replay.cc.

#include "src/cli/cmd_tune.h"

#include <cctype>
#include <functional>

#include <fmt/format.h>

#include "src/cli/cli_common.h"
#include "src/cli/tune_task.h"
#include "src/distributed/suite_runner.h"
#include "src/measure/emulator_measurer.h"
#include "src/records/tuning_log.h"
#include "src/tune/dispatch_table.h"
#include "src/tune/tuning_session.h"

namespace cutune::cli {

std::vector<std::filesystem::path> as_paths(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

nlohmann::json summary_json(const TaskKey& task, const TuneSummary& s, const std::string& log,
                            std::optional<double> flops) {
  nlohmann::json best = nullptr;
  if (s.best) {
    best = {{"config", s.best->to_json()}, {"time_ms", s.best_s * 1e3}};
    if (flops) best["gflops"] = *flops / s.best_s * 1e-9;
    if (task.device_name == kEmulatorDevice) best["time_is"] = "CPU emulator wall time, not GPU time";
  }
  return {{"task", task.to_string()},
          {"trials", s.total()},
          {"resumed", s.resumed},
          {"measured", s.measured},
          {"valid", s.valid},
          {"exhausted", s.exhausted},
          {"interrupted", s.interrupted},
          {"best", best},
          {"remeasured", s.remeasured},
          {"seconds", s.seconds},
          {"time_split_s", time_split_json(s)},
          {"log", log}};
}

void print_summary(const TaskKey& task, const TuneSummary& s, const std::string& log,
                   std::optional<double> flops) {
  fmt::print("{}: {} trials ({} resumed, {} measured), {} valid, {:.1f} s{}{}\n", task.to_string(),
             s.total(), s.resumed, s.measured, s.valid, s.seconds,
             s.exhausted ? " (space exhausted)" : "", s.interrupted ? " (interrupted)" : "");
  if (!s.best) {
    fmt::print("no valid configuration found\n");
  } else {
    std::string rate = flops ? fmt::format(" ({:.0f} GFLOP/s)", *flops / s.best_s * 1e-9) : "";
    if (task.device_name == kEmulatorDevice) rate = " (CPU emulator wall time, not GPU time)";
    fmt::print("best: {:.4g} ms{}  config {}: {}\n", s.best_s * 1e3, rate, s.best->index(),
               s.best->to_string());
  }
  if (!log.empty()) fmt::print("log: {}\n", log);
}

// With no --log, the records still go to a file, named after the task, in the working folder.
std::string default_log(const TaskKey& key) {
  std::string shape;
  for (int64_t v : key.shape) shape += (shape.empty() ? "" : "x") + std::to_string(v);
  std::string name =
      fmt::format("cutune-{}-{}-{}.jsonl", key.template_name, shape, key.target_arch);
  for (char& c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) c = '_';
  }
  return name;
}

namespace {

// Runs the session on the measurer with Ctrl-C ending the run after the batch in flight, and
// prints the summary (and, when interrupted, the command that resumes).
void tune_and_report(const TuningSession& session, Measurer& measurer, const TuneArgs& args,
                     const std::function<void(nlohmann::json&, const TuneSummary&)>& extra) {
  const TaskKey& key = session.task().key;
  std::string log = args.log;
  if (log.empty()) log = default_log(key);
  const LogMode mode = args.resume ? LogMode::resume : LogMode::fresh;
  if (std::optional<std::string> why = log_problem(log, mode, key)) throw UsageError(*why);
  if (args.log.empty()) {
    fmt::print(stderr, "records go to {} (name another file with --log)\n", log);
  }
  if (session.transfer_tasks() > 0) {
    fmt::print(stderr, "transfer: global model on {} records of {} other task(s)\n",
               session.transfer_rows(), session.transfer_tasks());
  }
  InterruptGuard interrupt;
  TuningOutcome out =
      session.run(measurer, {log, mode}, {.progress = !args.quiet, .stop = interrupt.flag()});
  const TuneSummary& s = out.summary;
  if (args.search.json) {
    nlohmann::json j = summary_json(key, s, log, session.task().flops);
    if (extra) extra(j, s);
    print_json(j);
  } else {
    print_summary(key, s, log, session.task().flops);
    if (extra) {
      nlohmann::json j;
      extra(j, s);
      if (j.contains("line")) fmt::print("{}\n", j["line"].get<std::string>());
    }
  }
  if (s.remeasured > 0 && !args.search.json)
    fmt::print("best chosen on a re-measurement of the {} fastest ({} rounds, interleaved)\n",
               s.remeasured, args.measure.remeasure_rounds);
  if (s.interrupted) {
    fmt::print(stderr,
               "interrupted: the batch in flight was measured and logged; resume with\n  {}\n",
               resume_command(args.log.empty() ? log : ""));
    throw ExitStatus{130};  // as a shell reports a command ended by SIGINT
  }
}

// One task in this process: a template on the GPU or in the emulator (records say device
// "emulator" and timer "emulator", never GPU times), a user's kernel (--spec, searched on its
// knob features) or a replayed cache, with transfer from logs or caches.
void run_tune(const TuneArgs& args) {
  if (!args.log.empty()) require_writable_file(args.log, "--log");
  TuneTask task = resolve_tune_task(args);
  // Before the log is touched: without a GPU this ends the command, leaving no file behind.
  std::unique_ptr<Measurer> measurer = task.make_measurer(0);
  task.bind(*measurer);
  TuningSession session(task.tuning_task(), task.search,
                        {.paths = as_paths(args.transfer_from), .featurize = task.featurize});
  if (!task.note().empty()) fmt::print(stderr, "{}\n", task.note());
  tune_and_report(session, *measurer, args, [&](nlohmann::json& j, const TuneSummary& s) {
    task.report(j, s);
  });
}

}  // namespace

void add_tune_commands(CLI::App& app) {
  auto* tune = app.add_subcommand("tune", "tune an operator on the GPU, or replay a cache");
  auto targs = std::make_shared<TuneArgs>();
  targs->source.replay.flag = "--replay";
  tune->add_option("op", targs->source.op.op, "operator (see `cutune ops`); omitted with --replay");
  tune->add_option("--shape", targs->source.op.shape,
                   "problem shape, e.g. 1024,1024,1024 for gemm M,N,K");
  tune->add_option("--template", targs->source.op.template_name,
                   "schedule template (default: the one the task parameters name)");
  targs->source.op.add_params_to(*tune);
  tune->add_option("--arch", targs->source.op.arch, "target architecture (default: the GPU's)");
  targs->search.add_to(*tune);
  tune->add_option("--points", targs->range.points,
                   "with --shape M=lo..hi,N,K: the most points of the range tuned")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  tune->add_option("--tolerance", targs->range.tolerance,
                   "with a range of M: a kernel of the dispatch table serves a point within "
                   "this share of the point's best")
      ->capture_default_str();
  tune->add_option("--candidates", targs->range.candidates,
                   "with a range of M: the best configurations of each point timed at every "
                   "point for the table")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  tune->add_option("--table", targs->range.table,
                   "with a range of M: write the dispatch table as JSON (cutune export --table)");
  tune->add_option("--log", targs->log,
                   "tuning log every record is appended to (default: cutune-TEMPLATE-SHAPE-ARCH"
                   ".jsonl in the working folder); must be new unless --resume");
  tune->add_flag("--resume", targs->resume, "continue the log without re-measuring");
  tune->add_option("--transfer-from", targs->transfer_from,
                   "logs of other tasks of the same template, or of one with the same IR "
                   "features (its variant for another element type); with --replay, also "
                   "Kernel Tuner caches of the same space; for transfer learning")
      ->expected(1, -1);
  tune->add_option("--replay", targs->replays,
                   "measure from a Kernel Tuner cache instead; several caches tune a replay "
                   "suite (tasks searched at once, one log)")
      ->expected(1, -1);
  tune->add_option("--replay-cost-ms", targs->measure.replay_cost_ms,
                   "with --replay: each answer takes this long on the measuring rank (a sleep), "
                   "to study scaling without GPUs");
  tune->add_flag("--coordinator-only", targs->coordinator_only,
                 "under mpirun: rank 0 searches and logs but does not measure");
  tune->add_flag("--no-transfer", targs->no_transfer,
                 "replay suite: a task does not learn from the earlier caches of its kernel "
                 "(default with xgb: it does, waiting for them)");
  tune->add_option("--concurrent-tasks", targs->concurrent_tasks,
                   "replay suite: tasks searched at once (default: all)");
  tune->add_option("--spec", targs->source.replay.spec,
                   "a T1 kernel specification: tune that kernel on the GPU (in place of OP and "
                   "--shape); with --replay, the cache's space");
  tune->add_flag("--noise", targs->source.replay.noise,
                 "with --replay: answer with one drawn repetition");
  tune->add_flag("--quiet", targs->quiet, "no progress line");
  tune->add_option("--device", targs->measure.device,
                   "gpu, or emulator: run each candidate in the CPU emulator (correctness only; "
                   "its times are emulator wall times, not GPU times)")
      ->capture_default_str();
  tune->add_option("--remeasure-top", targs->measure.remeasure_top,
                   "at the end, measure the K fastest again (interleaved, --remeasure-rounds "
                   "rounds) and choose the best on that (default: 8 on a GPU, 0 otherwise)");
  tune->add_flag("--no-pipeline", targs->measure.no_pipeline,
                 "GPU: propose each batch only after the previous one is measured (default: the "
                 "next batch is proposed, on a thread of its own, and compiled while the current "
                 "one is measured)");
  tune->add_option("--remeasure-rounds", targs->measure.remeasure_rounds,
                   "rounds of the end-of-run re-measurement")
      ->capture_default_str();
  tune->add_option("--devices", targs->measure.devices,
                   "GPUs to measure on, one worker each: all (default: every GPU of the task's "
                   "kind) or ordinals, e.g. 0,2");
  tune->callback([targs, tune] {
    if (!(targs->measure.replay_cost_ms >= 0 && targs->measure.replay_cost_ms < 1e6))
      throw UsageError("--replay-cost-ms must be in [0, 1e6)");
    if (targs->measure.replay_cost_ms > 0 && targs->replays.empty())
      throw UsageError("--replay-cost-ms needs --replay CACHE");
    if (targs->concurrent_tasks < 0) throw UsageError("--concurrent-tasks must be >= 0");
    if (targs->measure.device != "gpu" && targs->measure.device != "emulator")
      throw UsageError(
          fmt::format("--device must be gpu or emulator (got '{}')", targs->measure.device));
    if (targs->measure.device == "emulator" && !targs->replays.empty())
      throw UsageError("--device emulator measures operators; drop --replay");
    if (targs->measure.remeasure_top < -1) throw UsageError("--remeasure-top must be >= 0");
    const bool ranged = is_m_range(targs->source.op.shape);
    for (const char* flag : {"--points", "--tolerance", "--candidates", "--table"}) {
      if (!ranged && tune->count(flag) > 0)
        throw UsageError(fmt::format("{} takes a range of M: --shape M=lo..hi,N,K", flag));
    }
    if (ranged) {
      if (!targs->replays.empty() || !targs->source.replay.spec.empty())
        throw UsageError("a range of M tunes an operator; drop --replay and --spec");
      return run_tune_range(*targs);
    }
    const bool scaled = distributed::process_count() > 1 || targs->coordinator_only;
    if (targs->replays.empty() && !targs->source.op.op.empty() && scaled)
      return run_tune_operator_scaled(*targs);
    if (targs->replays.size() > 1 || scaled) return run_tune_scaled(*targs);
    if (!targs->replays.empty()) targs->source.replay.cache = targs->replays.front();
    run_tune(*targs);
  });
  add_replay_command(app);
}

}  // namespace cutune::cli
