#pragma once
// Tuning several replayed tasks (Kernel Tuner caches) at once into one log, on one process or
// over the ranks of an MPI job:
//
//   cutune tune --replay A.json.gz B.json.gz ... --trials N --log L      one process
//   mpirun -n R cutune tune --replay A B ... --trials N --log L           R ranks
//
// Rank 0 owns the search: up to `concurrent_tasks` tuning loops run at once, one thread each,
// so that while one task's model refits the others keep every rank busy. Their candidates go
// into one MeasureQueue; rank 0 measures from it too unless coordinator_only, and every other
// rank measures what it is sent (serve_rank). Each task's records depend only on the seed and
// on its results in proposal order, never on how many ranks or lanes measured them or when
// answers arrived (the determinism the MPI test checks).
//
// Records are appended as results arrive (each with its trial number, so the log's order may
// differ between runs while the trials do not), so an aborted job loses at most the candidates
// in flight; --resume continues each task from the log. With `transfer`, a task learns from
// the earlier caches of its kernel by the fixed rule of suite_runner.h.
//
// The engine is run_suite (suite_runner.h); this loads the caches and measures by replaying
// them.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cost_model/features.h"
#include "src/distributed/suite_runner.h"
#include "src/records/record.h"
#include "src/replay/replay_space.h"
#include "src/tune/search_policy.h"
#include "src/tune/tuner.h"

namespace cutune::distributed {

struct ReplaySuiteOptions {
  std::vector<std::string> caches;  // Kernel Tuner caches, one task each, in this order
  TuneOptions tune;                 // trials, batch, seed, log, resume (per task); progress: a
                                    // line per finished task
  PolicyFactory make_policy;
  bool noise = false;
  double cost_ms = 0;                    // --replay-cost-ms, slept by the measuring rank
  bool coordinator_only = false;         // rank 0 does not measure (needs other ranks)
  int concurrent_tasks = 0;              // tuning loops at once; 0: every task
  bool transfer = false;                 // earlier caches of a task's kernel train its global model
  std::vector<Record> transfer_records;  // --transfer-from: every task learns from these too
};

struct SuiteTaskResult {
  std::shared_ptr<const replay::ReplayTask> task;  // keeps summary.best's space alive
  TaskKey key;
  TuneSummary summary;
  double optimum_ms = 0;   // the cache's best
  double best_ms = 0;      // the cache's time of the best found; 0 when none
  int transfer_tasks = 0;  // caches its global model learnt from
};

// Rank 0 (or a single process): the tasks' results in cache order. Other ranks serve until rank
// 0 is done and return nothing. UserError for an unreadable cache or coordinator_only without
// other ranks.
std::vector<SuiteTaskResult> run_replay_suite(const ReplaySuiteOptions& options);

}  // namespace cutune::distributed
