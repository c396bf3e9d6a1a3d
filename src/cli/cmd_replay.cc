// cutune replay: a tuner's search efficiency on a replayed Kernel Tuner cache, over seeds. Not
// one tuning run but a study of many (src/tune/replay_study.h), each seed's search a policy of
// the task's TuningSession; the task comes from the one resolver (tune_task.h), as a `cutune
// tune --replay` run's does.

#include "src/cli/cmd_tune.h"

#include <chrono>

#include "src/cli/tune_task.h"
#include "src/tune/replay_study.h"

namespace cutune::cli {

namespace {

struct ReplayArgs {
  ReplaySource source;
  SearchArgs search;
  std::vector<std::string> transfer_from;
  int seeds = 10;
  int threads = 1;
};

void run_replay(const ReplayArgs& args) {
  const SearchOptions search = args.search.options();
  if (args.seeds < 1) throw UsageError(fmt::format("--seeds must be >= 1 (got {})", args.seeds));
  if (args.threads < 1) {
    throw UsageError(fmt::format("--threads must be >= 1 (got {})", args.threads));
  }
  TaskSource source;
  source.replay = args.source;
  const TuneTask t = resolve_tune_task(source, MeasureChoice{}, search);
  const replay::ReplayTask& task = *t.replay;
  TuningSession session(t.tuning_task(), t.search,
                        {.paths = as_paths(args.transfer_from), .featurize = t.featurize});
  if (session.transfer_tasks() > 0) {
    fmt::print(stderr, "transfer: global model on {} records of {} other task(s)\n",
               session.transfer_rows(), session.transfer_tasks());
  }
  StudyOptions o;
  o.trials = search.trials;
  o.seeds = args.seeds;
  o.batch = search.batch;
  o.noise = args.source.noise;
  o.threads = args.threads;
  o.first_seed = search.seed;
  const auto start = std::chrono::steady_clock::now();
  StudyResult r = run_replay_study(
      task, [&] { return session.make_policy(); }, o,
      [&](int done, int total) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        fmt::print(stderr, "[seed {}/{}] {:.1f} s, ETA {:.0f} s\n", done, total, elapsed,
                   elapsed / done * (total - done));
      });

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
    j["batch"] = o.batch;
    j["optimum_ms"] = r.optimum_ms;
    j["budgets"] = nlohmann::json::array();
    for (int b : budgets) {
      j["budgets"].push_back({{"trials", b},
                              {"median_optimum_over_best", r.median_ratio_at(b)},
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
  fmt::print(
      "columns: optimum time / time of the best found so far (1 = the optimum); median "
      "over seeds, and random search's expectation\n");
  fmt::print("{:>8}  {:>22}  {:>16}\n", "trials", "median optimum/best", "random expected");
  for (int b : budgets) {
    fmt::print("{:>8}  {:>22.3f}  {:>16.3f}\n", b, r.median_ratio_at(b),
               expected_random_ratio(task, b));
  }
  for (double f : thresholds) {
    std::optional<double> t = r.median_trials_to(f);
    fmt::print("median trials to {:.0f}% of the optimum: {} (random expects {:.0f})\n", f * 100,
               t ? fmt::format("{:.0f}", *t) : std::string("not reached"),
               expected_random_trials_to(task, f));
  }
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto* rep = app.add_subcommand("replay", "measure a tuner's efficiency on a replayed cache");
  auto rargs = std::make_shared<ReplayArgs>();
  rep->add_option("--cache", rargs->source.cache, "Kernel Tuner cache (.json or .json.gz)")
      ->required();
  rep->add_option("--spec", rargs->source.spec, "T1 space specification");
  rep->add_flag("--noise", rargs->source.noise, "answer with one drawn repetition");
  rargs->search.batch = StudyOptions{}.batch;
  rargs->search.add_to(*rep);
  rep->add_option("--transfer-from", rargs->transfer_from,
                  "xgb: Kernel Tuner caches or tuning logs of the same space on other GPUs "
                  "(or other tasks), to train the global model of transfer learning")
      ->expected(1, -1);
  rep->add_option("--seeds", rargs->seeds, "seeds to run")->capture_default_str();
  rep->add_option("--threads", rargs->threads, "seeds run in parallel")->capture_default_str();
  rep->callback([rargs] { run_replay(*rargs); });
}

}  // namespace cutune::cli
