#pragma once
// The pieces of `cutune tune` shared by its files: the search options every tuning command
// takes, what is tuned and where it is measured (TaskSource, MeasureChoice: what the resolver
// of tune_task.h takes, from tune, tune-suite and replay alike), the run summary; cmd_tune.cc
// runs one task in this process, cmd_tune_scaled.cc replay suites and MPI jobs, cmd_replay.cc
// `cutune replay`.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/cli/cli_common.h"
#include "src/records/tuning_log.h"
#include "src/replay/kt_cache.h"
#include "src/replay/replay_space.h"
#include "src/replay/t1_spec.h"
#include "src/tune/tuner.h"
#include "src/tune/tuning_session.h"

namespace cutune::cli {

struct SearchArgs {
  std::string tuner = "xgb";
  int trials = 200;
  int batch = 64;
  uint64_t seed = 0;
  std::string objective = "pairwise";
  double epsilon = ModelPolicyOptions{}.epsilon;
  int ensemble = ModelPolicyOptions{}.ensemble;
  double kappa = ModelPolicyOptions{}.kappa;
  std::string prior = "on";
  bool json = false;

  // The defaults shown by --help are the values held when this is called.
  void add_to(CLI::App& cmd) {
    cmd.add_option("--tuner", tuner, "search policy: xgb, ga, random or grid")
        ->capture_default_str();
    cmd.add_option("--trials", trials, "configurations to measure")->capture_default_str();
    cmd.add_option("--batch", batch, "configurations per batch (and per model refit)")
        ->capture_default_str();
    add_seed_option(cmd, seed, "search seed");
    cmd.add_option("--objective", objective, "xgb model objective: pairwise or regression")
        ->capture_default_str();
    cmd.add_option("--epsilon", epsilon, "xgb: share of each batch drawn at random")
        ->capture_default_str()
        ->check(number_in(0, 1));
    cmd.add_option("--ensemble", ensemble, "xgb: boosters, each on a bootstrap resample")
        ->capture_default_str()
        ->check(number_in(1, 32));
    cmd.add_option("--kappa", kappa,
                   "xgb: the acquisition is the boosters' mean + kappa * their spread")
        ->capture_default_str()
        ->check(number_in(0, HUGE_VAL));
    cmd.add_option("--prior", prior,
                   "xgb on an operator: rank the first batch by the analytical prior of the "
                   "configurations' IR features and fit on top of it (on), or start from a "
                   "random batch (off)")
        ->capture_default_str();
    cmd.add_flag("--json", json, "machine-readable output");
  }

  // UsageError for an unknown name or an out-of-range value.
  SearchOptions options() const {
    SearchOptions o;
    try {
      o.tuner = parse_tuner_kind(tuner);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    o.trials = trials;
    o.batch = batch;
    o.seed = seed;
    o.model.epsilon = epsilon;
    o.model.ensemble = ensemble;
    o.model.kappa = kappa;
    if (prior != "on" && prior != "off")
      throw UsageError(fmt::format("unknown --prior '{}' (expected on or off)", prior));
    o.prior = prior == "on";
    if (objective == "regression") {
      o.model.model.objective = cost_model::RankObjective::regression;
    } else if (objective != "pairwise") {
      throw UsageError(
          fmt::format("unknown --objective '{}' (expected pairwise or regression)", objective));
    }
    o.validate();
    return o;
  }
};

struct ReplaySource {
  std::string cache;
  std::string spec;
  bool noise = false;
  std::string flag = "--cache";  // the option that names the cache, for messages

  replay::ReplayTask load() const {
    require_readable_file(cache, flag);
    if (!spec.empty()) require_readable_file(spec, "--spec");
    replay::KtCache c = replay::load_kt_cache(cache);
    if (spec.empty()) return replay::ReplayTask::from_cache(std::move(c));
    return replay::ReplayTask::from_spec(std::move(c), replay::load_t1_spec(spec));
  }
};

// What is tuned, as a command line, a suite layer or a replay study names it: a Kernel Tuner
// cache (replay.cache; replay.spec its T1 space), else a user's kernel (replay.spec alone, a T1
// kernel specification, on the GPU), else a template (op: OP --shape [--template] [--dtype ...]
// [--arch]). src/cli/tune_task.h resolves it into a task.
struct TaskSource {
  TaskOptions op;  // --json is the search's
  ReplaySource replay;
};

// Where the candidates are measured, and what depends on it: the end-of-run re-measurement and
// the pipeline (a GPU's), the answers of a cache.
struct MeasureChoice {
  std::string device = "gpu";  // gpu, or emulator (correctness only, no GPU time)
  std::string devices;         // GPUs: all (empty) or ordinals (device_selection.h)
  int remeasure_top = -1;      // -1: 8 on a GPU, 0 for the emulator and caches
  int remeasure_rounds = 3;
  bool no_pipeline = false;
  double replay_cost_ms = 0;           // each answer of a cache takes this long (a sleep)
  std::optional<uint64_t> noise_seed;  // draws of a cache's noisy answers; default: the seed
};

// `tune --shape M=lo..hi,N,K`: the range's own options (cmd_tune_range.cc).
struct RangeArgs {
  int points = 12;          // the most points a range is tuned at
  double tolerance = 0.03;  // a kernel serves a point within this of the point's best
  int candidates = 3;       // the best configurations of each point that enter the choice
  std::string table;        // where the table goes as JSON (export --table reads it)
};

struct TuneArgs {
  RangeArgs range;
  TaskSource source;
  MeasureChoice measure;
  SearchArgs search;
  std::string log;
  bool resume = false;
  std::vector<std::string> transfer_from;
  bool quiet = false;
  std::vector<std::string> replays;  // --replay: one cache, or several (a replay suite)
  bool coordinator_only = false;
  int concurrent_tasks = 0;
  bool no_transfer = false;  // replay suite: tasks do not learn from earlier ones
};

std::vector<std::filesystem::path> as_paths(const std::vector<std::string>& v);

nlohmann::json summary_json(const TaskKey& task, const TuneSummary& s, const std::string& log,
                            std::optional<double> flops);

void print_summary(const TaskKey& task, const TuneSummary& s, const std::string& log,
                   std::optional<double> flops);

// With no --log, the records still go to a file, named after the task, in the working folder.
std::string default_log(const TaskKey& key);

// Several caches, or an MPI job (cmd_tune_scaled.cc).
void run_tune_scaled(const TuneArgs& args);
// `mpirun -n R cutune tune OP --shape ...` (cmd_tune_scaled.cc).
void run_tune_operator_scaled(const TuneArgs& args);
// `cutune replay` (cmd_replay.cc).
void add_replay_command(CLI::App& app);
// `cutune tune OP --shape M=lo..hi,N,K` (cmd_tune_range.cc).
void run_tune_range(const TuneArgs& args);

}  // namespace cutune::cli
