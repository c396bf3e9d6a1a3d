#pragma once
// A pool of supervised measuring workers (worker_process.h), one per GPU ordinal, that spreads
// a batch of candidates over the workers as they become free.
//
//   WorkerPool pool(base_options, {0, 2});          // one worker on GPU 0, one on GPU 2
//   pool.set_task(task, expected);                  // every worker gets it (its own device)
//   std::vector<PoolResult> r = pool.run(n, prepare);
//
// run() calls prepare(i) for each i in [0, n) on the thread of the worker that takes candidate
// i next (so work such as waiting for a compile overlaps other workers' measurements), and
// either finishes the candidate there (prepare returned a MeasureResult, e.g. a compile error)
// or sends the returned request to that worker. Results come back in candidate order, each with
// the ordinal of the GPU that measured it. A worker that dies, hangs or answers garbage is
// replaced on its GPU by its supervisor and the candidate keeps the result that says so; the
// other workers go on with the batch.
//
// Each worker is driven by its own thread for the pool's whole life: a worker gets
// PR_SET_PDEATHSIG, which fires when the *thread* that forked it ends, so a worker (or its
// replacement) must be started from a thread that outlives it.
//
// The pool assigns request ids, and lowers each request's best_so_far_s to the fastest ok
// median the pool has seen (the early-stop rule needs the best across all GPUs).

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "src/measure/worker_process.h"

namespace cutune {

struct PoolResult {
  MeasureResult result;
  int device = -1;  // GPU ordinal of the worker that measured it; -1 when prepare finished it
};

class WorkerPool {
 public:
  using Prepared = std::variant<MeasureRequest, MeasureResult>;
  // Called concurrently from several threads, once per candidate index.
  using Prepare = std::function<Prepared(size_t index)>;

  // One worker per entry of `devices` (GPU ordinals; distinct, non-empty). Workers start at
  // set_task().
  WorkerPool(WorkerOptions options, std::vector<int> devices);
  ~WorkerPool();  // shuts every worker down, then ends the threads
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Sends the task to every worker, with task.device set to the worker's ordinal. WorkerError
  // when any worker cannot be started or refuses the task.
  void set_task(const WorkerTask& task, const std::vector<char>& expected_outputs);

  // Called as each candidate's result is known (index, result), from the worker threads but
  // never two at once.
  using OnDone = std::function<void(size_t index, const PoolResult& result)>;

  // See above. prepare must not throw; WorkerError (no worker can be started at all) ends the
  // batch early and is rethrown after every worker thread has stopped. `on_done`, when set,
  // gets every result as it arrives (for logging before the batch ends).
  std::vector<PoolResult> run(size_t n, const Prepare& prepare, const OnDone& on_done = {});

  const std::vector<int>& devices() const { return devices_; }
  int restarts() const;  // workers replaced after a failure, all GPUs together
  // Candidates each worker measured in the last run(), by position in devices().
  const std::vector<int>& last_counts() const { return last_counts_; }

 private:
  // Runs job(w) on every worker's thread and waits until all have returned.
  void on_every_worker(const std::function<void(size_t)>& job);
  void lane(size_t w);

  std::vector<int> devices_;
  std::vector<std::unique_ptr<WorkerSupervisor>> workers_;
  std::vector<int> last_counts_;
  std::mutex best_mutex_;
  double best_s_;
  uint64_t next_id_ = 0;

  std::mutex lane_mutex_;
  std::condition_variable lane_cv_;
  const std::function<void(size_t)>* job_ = nullptr;
  uint64_t generation_ = 0;  // bumped for every job
  size_t pending_ = 0;       // threads still running the current job
  bool quit_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace cutune
