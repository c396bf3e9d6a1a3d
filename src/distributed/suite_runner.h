#pragma once
// Several tuning tasks searched at once into one log, on one process or over the ranks of an
// MPI job: the engine under the replay suite (`tune --replay A B ...`), under GPU or emulated
// tasks run by `mpirun ... cutune tune OP` and under tune-suite's layers searched at once (the
// command line's tasks come from src/cli/tune_task.h, through src/cli/suite_tasks.h).
//
//   std::vector<SuiteTask> tasks = ...;            // the same list on every rank
//   auto out = run_suite(tasks, factory, options); // rank 0: one result per task; others: {}
//
// Rank 0 owns the search: up to `concurrent_tasks` tuning loops run at once, one thread each,
// their candidates in one MeasureQueue; rank 0 measures from it too unless coordinator_only,
// and every other rank measures what it is sent with measurers of its own (`factory`). A
// task's records depend only on the seed, on its transfer model and on its results in
// proposal order, never on how many ranks measured them or when answers arrived.
//
// Transfer between tasks (`transfer`, xgb): task i learns from every earlier task j < i of the
// same template (TaskKey::template_name) and the same knob names (the tasks whose records i's
// featurizer places), waiting until those have finished; its global model is trained once, as it
// starts, on their trial records in trial order (resumed ones included). That fixed rule makes the
// records independent of timing and of the number of ranks; the price is that tasks of one template
// run one after another, while tasks of different templates run at once. Records given in
// `transfer_records` are added to every task's training set (each task's featurizer skips
// those it cannot place).

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cost_model/features.h"
#include "src/distributed/measure_queue.h"
#include "src/records/record.h"
#include "src/tune/search_policy.h"
#include "src/tune/transfer_model.h"
#include "src/tune/tuner.h"
#include "src/tune/tuning_session.h"

namespace cutune::distributed {

// A policy for one task (SearchOptions::policy_factory()).
using PolicyFactory = TaskPolicyFactory;

// One task. Everything pointed to must outlive run_suite().
struct SuiteTask {
  TaskKey key;  // device_name: what every measuring rank's measurer must report
  const ConfigSpace* space = nullptr;
  const cost_model::FeatureExtractor* features = nullptr;
  RecordFeaturizer featurize;  // places other tasks' records in `features` (transfer)
  std::optional<double> flops;
  std::vector<Config> seed_configs{};  // measured first (TuneOptions::seed_configs)
};

struct SuiteOptions {
  TuneOptions tune;  // trials, batch, seed, log, resume, remeasure, pipeline (per task; the
                     // seed configurations are each task's own); progress: the tuner's live
                     // line when there is one task only
  PolicyFactory make_policy;
  bool transfer = false;
  // Records of other runs (--transfer-from: logs, caches) every task learns from too, with or
  // without `transfer`; read on rank 0 only.
  std::vector<Record> transfer_records;
  bool coordinator_only = false;  // rank 0 does not measure (needs other ranks)
  int concurrent_tasks = 0;       // tuning loops at once; 0: every task
};

struct SuiteOutcome {
  TuneSummary summary;
  int transfer_tasks = 0;  // tasks its global model learnt from; 0 without transfer
  int transfer_rows = 0;
};

// Called on rank 0 as each task finishes (under a lock: never twice at once).
using TaskDone = std::function<void(size_t task, const SuiteOutcome& outcome, int finished)>;

// Rank 0 (or a single process): the outcomes in task order. Other ranks serve until rank 0 is
// done and return nothing. UserError for coordinator_only without other ranks.
std::vector<SuiteOutcome> run_suite(const std::vector<SuiteTask>& tasks,
                                    const MeasurerFactory& factory, const SuiteOptions& options,
                                    const TaskDone& on_done = {});

// The earlier tasks task `i` learns from under the transfer rule above.
std::vector<size_t> transfer_sources(const std::vector<SuiteTask>& tasks, size_t i);

// The rank of this process in its MPI job, 0 without MPI; and the job's size, 1 without.
int process_rank();
int process_count();

}  // namespace cutune::distributed
