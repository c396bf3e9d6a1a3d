#pragma once
// MPI for cutune (built only with CUTUNE_WITH_MPI): the session, rank 0's remote lanes and the
// loop of every other rank.
//
// Messages (JSON text, MPI_CHAR):
//   rank 0 -> r   tag kWork    {"id": n, "task": t, "config": index}
//   r -> rank 0   tag kResult  {"id": n, "device": "r" | "r:ordinal", "result": {...}}
//   rank 0 -> r   tag kStop    {}   (no more work: r leaves its loop and finalizes)
// A rank that dies takes the whole MPI job down (mpirun's default); rank 0 has appended every
// result that arrived to the log by then, so `--resume` continues with any number of ranks.

#include <thread>

#include "src/distributed/measure_queue.h"

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
  RemoteLanes(MeasureQueue& queue, int inflight = 3);
  ~RemoteLanes();  // joins; close the queue first

 private:
  void loop(MeasureQueue& queue, int inflight);
  std::thread thread_;
};

// Ranks > 0: measures what rank 0 sends with `lane` until told to stop.
void serve_rank(LocalLane& lane);

}  // namespace cutune::distributed
