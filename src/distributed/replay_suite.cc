#include "src/distributed/replay_suite.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "src/base/errors.h"
#include "src/distributed/measure_queue.h"
#include "src/replay/kt_cache.h"
#include "src/tune/replay_measurer_adapter.h"
#ifdef CUTUNE_WITH_MPI
#include "src/distributed/mpi_world.h"
#endif

namespace cutune::distributed {

int process_rank() {
#ifdef CUTUNE_WITH_MPI
  return mpi_rank();
#else
  return 0;
#endif
}

int process_count() {
#ifdef CUTUNE_WITH_MPI
  return mpi_size();
#else
  return 1;
#endif
}

std::vector<SuiteTaskResult> run_replay_suite(const ReplaySuiteOptions& o) {
  const int rank = process_rank();
  const int ranks = process_count();
  if (o.coordinator_only && ranks < 2)
    throw UserError(
        "--coordinator-only needs other ranks to measure (run under mpirun -n 2 or more)");
  // Every rank loads every task: candidates travel as configuration indices.
  std::vector<std::shared_ptr<const replay::ReplayTask>> tasks;
  for (const std::string& path : o.caches)
    tasks.push_back(std::make_shared<const replay::ReplayTask>(
        replay::ReplayTask::from_cache(replay::load_kt_cache(path))));
  std::vector<const ConfigSpace*> spaces;
  for (const auto& t : tasks) spaces.push_back(&t->space());
  // Each lane measures with its own adapter; the noise seed is per task so that a lane's draws
  // do not depend on the other tasks it served.
  MeasurerFactory factory = [&](int task) -> std::unique_ptr<Measurer> {
    return std::make_unique<ReplayMeasurerAdapter>(*tasks[size_t(task)], o.noise,
                                                   o.tune.seed + uint64_t(task), o.cost_ms);
  };

  if (rank != 0) {
#ifdef CUTUNE_WITH_MPI
    LocalLane lane(factory, spaces);
    serve_rank(lane);
#endif
    return {};
  }

  MeasureQueue queue;
  std::vector<SuiteTaskResult> results(tasks.size());
  std::exception_ptr error;
  std::mutex mutex;  // error, and the progress lines
  {
    std::optional<LocalLanes> local;
    if (!o.coordinator_only) local.emplace(queue, 1, factory, spaces, ranks > 1 ? "0" : "");
#ifdef CUTUNE_WITH_MPI
    std::optional<RemoteLanes> remote;
    if (ranks > 1) remote.emplace(queue);
#endif
    const int loops = o.concurrent_tasks > 0 ? std::min<int>(o.concurrent_tasks, int(tasks.size()))
                                             : int(tasks.size());
    std::atomic<size_t> next{0};
    std::atomic<int> finished{0};
    std::vector<std::thread> tuners;
    for (int l = 0; l < loops; ++l) {
      tuners.emplace_back([&] {
        for (size_t t; (t = next++) < tasks.size();) {
          try {
            const ConfigSpace& space = tasks[t]->space();
            auto features = cost_model::make_knob_features(space);
            auto policy = o.make_policy(space, features.get());
            SuiteTaskResult& r = results[t];
            r.task = tasks[t];
            r.key = replay_task_key(*tasks[t]);
            TaskMeasurer measurer(queue, int(t), tasks[t]->cache().device_name, "replay");
            TuneOptions tune = o.tune;
            const bool progress = tune.progress;
            tune.progress = false;  // several loops at once: one line per finished task instead
            r.summary = Tuner(space, measurer, *policy, r.key, tune).run();
            r.optimum_ms = tasks[t]->summary().best_time_ms;
            if (r.summary.best) r.best_ms = tasks[t]->find(*r.summary.best)->time_ms;
            std::lock_guard<std::mutex> lock(mutex);
            if (progress)
              fmt::print(stderr, "[{}/{}] {}: {} trials, best {:.4g} ms ({:.1f}% of the optimum)\n",
                         ++finished, tasks.size(), r.key.to_string(), r.summary.total(), r.best_ms,
                         r.best_ms > 0 ? 100.0 * r.optimum_ms / r.best_ms : 0.0);
          } catch (...) {
            std::lock_guard<std::mutex> lock(mutex);
            if (!error) error = std::current_exception();
            next = tasks.size();
          }
        }
      });
    }
    for (std::thread& t : tuners) t.join();
    queue.close();
  }  // lanes end here: local threads leave take(), remote lanes tell every rank to stop
  if (error) std::rethrow_exception(error);
  return results;
}

}  // namespace cutune::distributed
