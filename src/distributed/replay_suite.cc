#include "src/distributed/replay_suite.h"

#include <mutex>

#include <fmt/format.h>

#include "src/replay/kt_cache.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/tuning_session.h"

namespace cutune::distributed {

std::vector<SuiteTaskResult> run_replay_suite(const ReplaySuiteOptions& o) {
  // Every rank loads every task: candidates travel as configuration indices.
  std::vector<std::shared_ptr<const replay::ReplayTask>> replays;
  for (const std::string& path : o.caches)
    replays.push_back(std::make_shared<const replay::ReplayTask>(
        replay::ReplayTask::from_cache(replay::load_kt_cache(path))));
  std::vector<std::unique_ptr<cost_model::FeatureExtractor>> features;
  std::vector<SuiteTask> tasks;
  for (const auto& t : replays) {
    features.push_back(cost_model::make_knob_features(t->space()));
    tasks.push_back({.key = replay_task_key(*t),
                     .space = &t->space(),
                     .features = features.back().get(),
                     .featurize = knob_featurizer(t->space(), *features.back()),
                     .flops = std::nullopt});
  }
  // Each lane measures with its own adapter; the noise seed is per task so that a lane's draws
  // do not depend on the other tasks it served.
  MeasurerFactory factory = [&](int task) -> std::unique_ptr<Measurer> {
    return std::make_unique<ReplayMeasurerAdapter>(*replays[size_t(task)], o.noise,
                                                   o.tune.seed + uint64_t(task), o.cost_ms);
  };
  SuiteOptions suite;
  suite.tune = o.tune;
  suite.make_policy = o.make_policy;
  suite.transfer = o.transfer;
  suite.transfer_records = o.transfer_records;
  suite.coordinator_only = o.coordinator_only;
  suite.concurrent_tasks = o.concurrent_tasks;

  std::vector<SuiteTaskResult> results(tasks.size());
  const auto fill = [&](size_t t, const SuiteOutcome& out) {
    SuiteTaskResult& r = results[t];
    r.task = replays[t];
    r.key = tasks[t].key;
    r.summary = out.summary;
    r.transfer_tasks = out.transfer_tasks;
    r.optimum_ms = replays[t]->summary().best_time_ms;
    if (r.summary.best) r.best_ms = replays[t]->find(*r.summary.best)->time_ms;
  };
  const bool progress = o.tune.progress;
  std::vector<SuiteOutcome> outcomes =
      run_suite(tasks, factory, suite, [&](size_t t, const SuiteOutcome& out, int finished) {
        fill(t, out);
        const SuiteTaskResult& r = results[t];
        if (progress)
          fmt::print(stderr, "[{}/{}] {}: {} trials, best {:.4g} ms ({:.1f}% of the optimum){}\n",
                     finished, tasks.size(), r.key.to_string(), r.summary.total(), r.best_ms,
                     r.best_ms > 0 ? 100.0 * r.optimum_ms / r.best_ms : 0.0,
                     r.transfer_tasks > 0
                         ? fmt::format(", transfer from {} cache(s)", r.transfer_tasks)
                         : "");
      });
  if (outcomes.empty()) return {};  // a rank that served
  for (size_t t = 0; t < tasks.size(); ++t) fill(t, outcomes[t]);
  return results;
}

}  // namespace cutune::distributed
