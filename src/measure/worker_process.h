#pragma once
// The parent's side of worker isolation: starts the measuring worker (a child process running
// worker_main over a socket pair), sends it the task, and turns every way a worker can fail
// into a result instead of an exception:
//
//   the worker dies (a signal, an exit)       -> runtime_error, "worker died: ..."
//   it does not answer within the watchdog    -> timeout; the worker is killed (SIGKILL)
//   it answers garbage                        -> runtime_error; the worker is killed
//   it reports a poisoned CUDA context        -> its result (runtime_error) stands
//
// In each case the worker is replaced before the next request (the task is sent again), so a
// run goes on and every request gets exactly one result. The child gets PR_SET_PDEATHSIG, so it
// never outlives the parent.

#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/measure/worker_protocol.h"

namespace cutune {

// The environment cannot run a worker at all (the executable does not start, the task cannot
// be set up): not a candidate's fault, so it is an exception.
class WorkerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct WorkerOptions {
  // argv of the worker; "--fd 3" is appended. E.g. {"/proc/self/exe", "__worker"}.
  std::vector<std::string> command;
  double measure_timeout_s = 10;  // watchdog per measure request
  double setup_timeout_s = 120;   // task setup: context, allocation, the reference
};

class WorkerSupervisor {
 public:
  explicit WorkerSupervisor(WorkerOptions options);
  ~WorkerSupervisor();  // asks the worker to exit, kills it if it does not
  WorkerSupervisor(const WorkerSupervisor&) = delete;
  WorkerSupervisor& operator=(const WorkerSupervisor&) = delete;

  // Sets the task every worker gets first and sends it now (starting a worker if none runs).
  // WorkerError when the worker cannot be started or refuses the task.
  void set_task(WorkerTask task, std::vector<char> expected_outputs);

  // One result for `request`, whatever happens to the worker (see above). WorkerError only
  // when no worker can be started or set up at all.
  MeasureReply measure(MeasureRequest request);

  int restarts() const { return restarts_; }  // workers replaced after a failure
  pid_t pid() const { return pid_; }          // of the live worker; -1 when none
  const WorkerOptions& options() const { return options_; }

 private:
  void start();  // spawns and sends the task; WorkerError on failure
  void send_task();
  // Ends the live worker and leaves how it ended in last_exit_: `graceful` asks it to exit;
  // `dying` gives a worker that hung up a moment to finish dying; `kill` sends SIGKILL at once.
  enum class Stop { graceful, dying, kill };
  void stop(Stop how);
  std::string reap(double wait_s);  // waits for the child up to wait_s, then SIGKILL

  WorkerOptions options_;
  std::optional<WorkerTask> task_;
  std::vector<char> expected_;
  pid_t pid_ = -1;
  int fd_ = -1;
  int restarts_ = 0;
  std::string last_exit_;
};

}  // namespace cutune
