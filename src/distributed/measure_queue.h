#pragma once
// The coordinator's queue of candidates waiting to be measured, shared by the tuning loops of
// several tasks (producers) and by whoever measures (lanes: local threads, remote MPI ranks).
//
//   tuner thread:  TaskMeasurer m(queue, task_id, ...);  m.measure(batch)   // blocks
//   lane:          auto item = queue.take();  ...  queue.complete(*item, result);
//
// measure() returns the batch's results in proposal order whichever lanes measured them and in
// whatever order they finished, so a tuning run's records do not depend on how many lanes
// there are (the policy sees results per batch, never per arrival). A sink given to measure()
// gets each result as it arrives (for the log: an aborted job loses only what is in flight).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "src/measure/measurer.h"

namespace cutune::distributed {

// One candidate: configuration `config_index` of task `task` (an index into the run's task
// list, the same on every rank).
struct WorkItem {
  uint64_t id = 0;
  int task = 0;
  uint64_t config_index = 0;
};

class MeasureQueue {
 public:
  // Queues one batch and waits for all of its results. Thread-safe. `on_result`, when set, is
  // called as each result arrives, on the completing lane's thread, under the queue's lock
  // (so never twice at once; it must not call back into the queue).
  std::vector<MeasureResult> measure(int task, const std::vector<Config>& batch,
                                     const ResultSink& on_result = {});

  // The next candidate, waiting for one when `wait`; nullopt when closed (or, without wait,
  // when none is queued).
  std::optional<WorkItem> take(bool wait = true);
  // The result of a taken item. A non-empty `device` (the measuring rank) goes into
  // result.details.gpu.device: "rank:ordinal" when the local measurer named a GPU ordinal there,
  // else "rank".
  void complete(const WorkItem& item, MeasureResult result, const std::string& device);

  // No more batches: lanes waiting in take() get nullopt.
  void close();
  // Closed, and every queued item taken.
  bool drained();

 private:
  struct Pending {
    std::vector<MeasureResult>* results;
    const ResultSink* sink;
    size_t slot;
    std::shared_ptr<size_t> remaining;
  };
  std::mutex mutex_;
  std::condition_variable work_cv_;  // lanes wait for items
  std::condition_variable done_cv_;  // producers wait for their batch
  std::deque<WorkItem> queue_;
  std::unordered_map<uint64_t, Pending> pending_;
  uint64_t next_id_ = 0;
  bool closed_ = false;
};

// What measures configuration `config_index` of task `task` on this process: one per lane and
// task, made on first use (each rank makes its own from the same command line).
using MeasurerFactory = std::function<std::unique_ptr<Measurer>(int task)>;

// Measures a taken item with the lane's own measurers (made by `factory` as tasks appear);
// `spaces[task]` turns indices back into configurations.
class LocalLane {
 public:
  LocalLane(MeasurerFactory factory, std::vector<const ConfigSpace*> spaces);
  // Measures several items (of any tasks) as few measure() calls as possible, in order.
  std::vector<MeasureResult> measure(const std::vector<WorkItem>& items);
  // The device the lane's measurer of `task` measures on (made now if need be).
  std::string device_name(int task);
  std::string target_arch(int task);
  const ConfigSpace& space(int task) const { return *spaces_.at(size_t(task)); }

 private:
  Measurer& measurer(int task);
  MeasurerFactory factory_;
  std::vector<const ConfigSpace*> spaces_;
  std::unordered_map<int, std::unique_ptr<Measurer>> measurers_;
};

// Lanes on threads of this process, each taking items from `queue` until it closes.
class LocalLanes {
 public:
  LocalLanes(MeasureQueue& queue, int lanes, const MeasurerFactory& factory,
             const std::vector<const ConfigSpace*>& spaces, std::string device_prefix);
  ~LocalLanes();  // joins; close the queue first

 private:
  std::vector<std::thread> threads_;
};

// A Measurer for one task whose candidates go through the queue.
class TaskMeasurer final : public Measurer {
 public:
  TaskMeasurer(MeasureQueue& queue, int task, std::string device_name, std::string target_arch)
      : queue_(queue),
        task_(task),
        device_(std::move(device_name)),
        arch_(std::move(target_arch)) {}
  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    return queue_.measure(task_, batch);
  }
  std::vector<MeasureResult> measure_streaming(const std::vector<Config>& batch,
                                               const ResultSink& on_result) override {
    return queue_.measure(task_, batch, on_result);
  }
  std::string device_name() const override { return device_; }
  std::string target_arch() const override { return arch_; }

 private:
  MeasureQueue& queue_;
  int task_;
  std::string device_, arch_;
};

}  // namespace cutune::distributed
