#include "src/cli/suite_tasks.h"

namespace cutune::cli {

SuiteTasks::SuiteTasks(std::vector<TuneTask> tasks, bool coordinator_only)
    : tasks_(std::move(tasks)) {
  if (distributed::process_rank() != 0 || tasks_.empty()) return;
  first_ = tasks_.front().make_measurer(0);
  const std::string device = first_->device_name(), arch = first_->target_arch();
  for (TuneTask& t : tasks_) t.bind(device, arch);
  if (coordinator_only) first_.reset();  // its GPU workers would sit idle
}

std::vector<distributed::SuiteOutcome> SuiteTasks::run(const distributed::SuiteOptions& options,
                                                       const distributed::TaskDone& on_done) {
  std::vector<distributed::SuiteTask> suite;
  for (const TuneTask& t : tasks_) suite.push_back(t.suite_task());
  // Each lane (each rank) makes its own measurers, but rank 0's lane takes the one made above.
  distributed::MeasurerFactory lanes = [this](int task) -> std::unique_ptr<Measurer> {
    if (task == 0 && first_) return std::move(first_);
    return tasks_[size_t(task)].make_measurer(task);
  };
  return distributed::run_suite(suite, lanes, options, on_done);
}

}  // namespace cutune::cli
