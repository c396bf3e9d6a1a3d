#pragma once
// MPI for cutune (built only with CUTUNE_WITH_MPI): the session, rank 0's remote lanes and the
// loop of every other rank.
//
// Messages (JSON text, MPI_CHAR):
//   rank 0 -> r   tag kWork    {"id": n, "task": t, "config": index,
//                               "key": {"op", "shape", "dtype", "template", "arch", "device"},
//                               "knobs": {...}}
//   r -> rank 0   tag kResult  {"id": n, "device": "r" | "r:ordinal", "result": {...}}
//   rank 0 -> r   tag kStop    {}   (no more work: r leaves its loop and finalizes)
// A work item names its task in full (operator, shape, template, target and device kind) and
// its configuration (index and knob values), so that the measuring rank builds exactly that
// kernel: it checks them against its own task `t` (made from the same command line) and that
// its measurer measures on the device kind the task targets, and refuses with one line (which
// ends the job) where they differ. A rank that dies takes the whole MPI job down (mpirun's
// default); rank 0 has appended every result that arrived to the log by then, so `--resume`
// continues with any number of ranks.

#include <thread>

#include "src/distributed/measure_queue.h"
#include "src/records/record.h"

namespace cutune::distributed {

// Initialises MPI when this process was started by mpirun or srun (their environment says
// so), else does nothing; finalizes on destruction. One per process, in main().
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

bool mpi_active();  // MPI was initialised by MpiSession
int mpi_rank();     // 0 without MPI
int mpi_size();     // 1 without MPI

// Ends every rank of the job with `code` when more than one rank runs (a rank that fails alone
// would leave the others waiting); returns otherwise.
void abort_job(int code);

// Rank 0: a thread that hands queued items to ranks 1..size-1 (`inflight` at a time each) and
// completes them with the answers. It ends once the queue is drained and nothing is in flight,
// and then tells every rank to stop.
class RemoteLanes {
 public:
  // The suite's task keys and spaces, in the order items name them.
  RemoteLanes(MeasureQueue& queue, std::vector<TaskKey> keys,
              std::vector<const ConfigSpace*> spaces, int inflight = 3);
  ~RemoteLanes();  // joins; close the queue first

 private:
  void loop(MeasureQueue& queue, int inflight);
  std::vector<TaskKey> keys_;
  std::vector<const ConfigSpace*> spaces_;
  std::thread thread_;
};

// Ranks > 0: measures what rank 0 sends with `lane` until told to stop. UserError when an item
// names another operator, shape, dtype or template than this rank's `keys[t]`, other knob
// values than its space's, or another device or target than the lane's measurer of the task
// reports (so keys[t] needs no device: a rank learns it from its own GPUs).
void serve_rank(LocalLane& lane, const std::vector<TaskKey>& keys);

}  // namespace cutune::distributed
