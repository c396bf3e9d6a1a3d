#include "src/distributed/suite_runner.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "src/base/errors.h"
#include "src/records/tuning_log.h"
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

std::vector<size_t> transfer_sources(const std::vector<SuiteTask>& tasks, size_t i) {
  // The same template, and knobs of the same names (caches of one kernel name may differ in
  // their parameters: those records would not place, and waiting for them would gain nothing).
  const auto knob_names = [](const ConfigSpace& space) {
    std::vector<std::string> names;
    for (const Knob& k : space.knobs()) names.push_back(k.name());
    return names;
  };
  const std::vector<std::string> own = knob_names(*tasks[i].space);
  std::vector<size_t> out;
  for (size_t j = 0; j < i; ++j)
    if (tasks[j].key.template_name == tasks[i].key.template_name &&
        knob_names(*tasks[j].space) == own)
      out.push_back(j);
  return out;
}

namespace {

// The trial records of finished tasks, for the transfer models of later ones.
class FinishedTasks {
 public:
  explicit FinishedTasks(size_t n) : records_(n), state_(n, State::running) {}

  void finish(size_t task, std::vector<Record> records) {
    std::lock_guard<std::mutex> lock(mutex_);
    records_[task] = std::move(records);
    state_[task] = State::done;
    cv_.notify_all();
  }
  void fail(size_t task) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_[task] = State::failed;
    cv_.notify_all();
  }
  // Waits for every task of `sources`; their records in that order, or nullopt when one failed
  // (the suite is ending with its error).
  std::optional<std::vector<Record>> wait_for(const std::vector<size_t>& sources) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] {
      return std::all_of(sources.begin(), sources.end(),
                         [&](size_t j) { return state_[j] != State::running; });
    });
    std::vector<Record> all;
    for (size_t j : sources) {
      if (state_[j] == State::failed) return std::nullopt;
      all.insert(all.end(), records_[j].begin(), records_[j].end());
    }
    return all;
  }

 private:
  enum class State { running, done, failed };
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::vector<Record>> records_;
  std::vector<State> state_;
};

// A task's trial records in trial order: those resumed from the log, then this run's.
std::vector<Record> trial_records(const std::vector<Record>& resumed, const TaskKey& key,
                                  const std::vector<Record>& measured) {
  std::vector<Record> out;
  for (const std::vector<Record>* part : {&resumed, &measured})
    for (const Record& r : *part)
      if (r.kind == RecordKind::trial && r.task == key) out.push_back(r);
  std::stable_sort(out.begin(), out.end(),
                   [](const Record& a, const Record& b) { return a.trial < b.trial; });
  return out;
}

}  // namespace

std::vector<SuiteOutcome> run_suite(const std::vector<SuiteTask>& tasks,
                                    const MeasurerFactory& factory, const SuiteOptions& o,
                                    const TaskDone& on_done) {
  const int rank = process_rank();
  const int ranks = process_count();
  if (o.coordinator_only && ranks < 2)
    throw UserError(
        "--coordinator-only needs other ranks to measure (run under mpirun -n 2 or more)");
  std::vector<const ConfigSpace*> spaces;
  std::vector<TaskKey> keys;
  for (const SuiteTask& t : tasks) {
    spaces.push_back(t.space);
    keys.push_back(t.key);
  }

  if (rank != 0) {
#ifdef CUTUNE_WITH_MPI
    LocalLane lane(factory, spaces);
    serve_rank(lane, keys);
#endif
    return {};
  }

  // With transfer and --resume, a source task's records from earlier runs come from the log.
  std::vector<Record> resumed;
  if (o.transfer && o.tune.resume && !o.tune.log.empty() && std::filesystem::exists(o.tune.log))
    resumed = read_log(o.tune.log, {.lenient = true}).records;

  MeasureQueue queue;
  FinishedTasks finished_tasks(tasks.size());
  std::vector<SuiteOutcome> results(tasks.size());
  std::exception_ptr error;
  std::mutex mutex;  // error, and on_done
  {
    std::optional<LocalLanes> local;
    if (!o.coordinator_only) local.emplace(queue, 1, factory, spaces, ranks > 1 ? "0" : "");
#ifdef CUTUNE_WITH_MPI
    std::optional<RemoteLanes> remote;
    if (ranks > 1) remote.emplace(queue, keys, spaces);
#endif
    const int loops = o.concurrent_tasks > 0 ? std::min<int>(o.concurrent_tasks, int(tasks.size()))
                                             : int(tasks.size());
    std::atomic<size_t> next{0};
    int finished = 0;
    std::vector<std::thread> tuners;
    for (int l = 0; l < loops; ++l) {
      tuners.emplace_back([&] {
        // Loops take tasks in order, so every task a loop waits for was taken before by a loop
        // that is running it (or has finished it): no waiting in a circle.
        for (size_t t; (t = next++) < tasks.size();) {
          try {
            const SuiteTask& task = tasks[t];
            SuiteOutcome& r = results[t];
            std::shared_ptr<const TransferModel> transfer;
            const std::vector<size_t> sources =
                o.transfer ? transfer_sources(tasks, t) : std::vector<size_t>{};
            if (!sources.empty() || !o.transfer_records.empty()) {
              std::optional<std::vector<Record>> records = finished_tasks.wait_for(sources);
              if (!records) {
                finished_tasks.fail(t);
                continue;
              }
              records->insert(records->end(), o.transfer_records.begin(), o.transfer_records.end());
              try {
                CUTUNE_CHECK(task.features && task.featurize,
                             "transfer for a suite task without features");
                transfer = std::make_shared<TransferModel>(
                    TransferModel::train(*records, task.key, task.featurize, task.features->size(),
                                         task.features->schema()));
                r.transfer_tasks = transfer->tasks();
                r.transfer_rows = transfer->rows();
              } catch (const std::invalid_argument&) {
                // Nothing usable (too few records, none ok): this task learns from none.
              }
            }
            auto policy = o.make_policy(*task.space, task.features, transfer);
            TaskMeasurer measurer(queue, int(t), task.key.device_name, task.key.target_arch);
            TuneOptions tune = o.tune;
            // Several loops at once: on_done reports each task instead of live lines.
            tune.progress = tune.progress && tasks.size() == 1;
            tune.flops = task.flops;
            tune.seed_configs = task.seed_configs;
            Tuner tuner(*task.space, measurer, *policy, task.key, tune);
            r.summary = tuner.run();
            finished_tasks.finish(t, trial_records(resumed, task.key, tuner.records()));
            std::lock_guard<std::mutex> lock(mutex);
            ++finished;
            if (on_done) on_done(t, r, finished);
          } catch (...) {
            finished_tasks.fail(t);
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
