#pragma once
// The worker side: a loop that answers the parent's frames (worker_protocol.h) with a backend
// that does the measuring. The real backend drives the GPU (worker_gpu.h); the fake one
// misbehaves on request so that supervision can be tested without a GPU.

#include <memory>
#include <string>
#include <vector>

#include "src/measure/worker_protocol.h"

namespace cutune {

class WorkerBackend {
 public:
  virtual ~WorkerBackend() = default;
  // Prepares a task (allocations, inputs, reference). Throws with a one-line reason when the
  // environment cannot (no device, no cuBLAS); the loop reports it as a `failed` frame.
  virtual void setup(const WorkerTask& task, std::vector<char> expected_outputs) = 0;
  // Measures one candidate. Candidate failures are results; an exception here is reported as
  // a runtime_error with a poisoned context, so the parent starts a fresh worker.
  virtual MeasureReply measure(const MeasureRequest& request) = 0;
};

// The fake backend picks its behaviour from the request's kernel name:
//   fake_ok       answers ok, one time of (1 + id % 3) ms, details: worker.pid, .setups,
//                 gpu.device, compile.cubin_bytes, worker.baseline_spec (the task's
//                 baseline), and worker.task: its arguments' kinds, element
//                 types, sizes, fill rules and first blob bytes, the expected and
//                 reference-cubin sizes}
//   fake_slow     sleeps 0.3 s, then answers like fake_ok
//   fake_wrong    answers wrong_answer
//   fake_poison   answers runtime_error with context_poisoned
//   fake_sleep    never answers (the watchdog's case)
//   fake_crash    dies of SIGSEGV;  fake_abort: SIGABRT;  fake_exit: exits 3 without answering
//   fake_garbage  writes bytes that are not a frame
// A task with an argument named "fail_setup" fails its setup.
std::unique_ptr<WorkerBackend> make_fake_backend(int fd);

// Serves frames on `fd` until shutdown or the parent goes away; returns the exit code.
int run_worker(int fd, WorkerBackend& backend);

// Entry point of worker mode: `[--fd N] [--fake]` (fd 3 by default). Used by `cutune __worker`
// and by test worker binaries.
int worker_main(const std::vector<std::string>& args);

}  // namespace cutune
