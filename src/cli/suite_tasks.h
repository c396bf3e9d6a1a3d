#pragma once
// Tasks from the one resolver (tune_task.h) through the suite engine
// (src/distributed/suite_runner.h), on one process or over the ranks of an MPI job: a replay
// suite (`tune --replay A B ...`), `mpirun ... cutune tune OP` and tune-suite's layers searched
// at once.
//
//   SuiteTasks suite(std::move(tasks), coordinator_only);  // rank 0 binds every task
//   auto out = suite.run(options, on_done);  // rank 0: one outcome per task; others: {}
//
// Rank 0 makes task 0's measurer first, so that without a GPU the command ends before a log is
// touched; its device and arch name every task (a suite's tasks are measured alike), and it
// measures on rank 0's lane unless coordinator_only. The other ranks bind nothing: their keys
// lack the device and arch (a cache's is whole), as serve_rank compares them with rank 0's.

#include <memory>
#include <vector>

#include "src/cli/tune_task.h"
#include "src/distributed/suite_runner.h"
#include "src/measure/measurer.h"

namespace cutune::cli {

class SuiteTasks {
 public:
  SuiteTasks(std::vector<TuneTask> tasks, bool coordinator_only);

  size_t size() const { return tasks_.size(); }
  const TuneTask& operator[](size_t i) const { return tasks_[i]; }

  // Every rank runs this; `options.tune` holds what the tasks share (their seed configurations
  // are their own).
  std::vector<distributed::SuiteOutcome> run(const distributed::SuiteOptions& options,
                                             const distributed::TaskDone& on_done = {});

 private:
  std::vector<TuneTask> tasks_;
  std::unique_ptr<Measurer> first_;  // rank 0's of task 0, until its lane takes it
};

}  // namespace cutune::cli
