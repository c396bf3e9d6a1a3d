#pragma once
// The tuning loop, behind a small façade: a policy proposes a batch, the measurer measures it,
// every result is appended to the log at once (so a killed run loses nothing), the policy
// observes the results, until `trials` configurations of the task have been measured or the
// space has nothing left.
//
//   Tuner tuner(space, measurer, policy, task, options);
//   TuneSummary s = tuner.run();
//
// Resume: with options.resume, the log's records of this task (same TaskKey) count towards
// `trials` and are observed by the policy first; they are never measured again.
//
// Commands do not drive this loop directly: they go through TuningSession (tuning_session.h),
// which checks the log, trains the transfer model and builds the policy.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "src/records/record.h"
#include "src/space/config_space.h"
#include "src/measure/measurer.h"
#include "src/tune/search_policy.h"

namespace cutune {

struct TuneOptions {
  int trials = 200;  // configurations of the task to have measured in all, resumed ones included
  int batch = 64;    // configurations per measure() call
  std::filesystem::path log;  // empty: no log
  bool resume = false;
  bool exclusive_log = false;  // hold the log exclusively (LogWriterOptions::exclusive)
  uint64_t seed = 0;
  bool progress = true;         // the live line on stderr
  std::optional<double> flops;  // work of one kernel run, for GFLOP/s in progress and summary
  // Read before each batch: once true, the run stops after the batch in flight (which is
  // measured and logged in full) and the summary says `interrupted`. Null: never.
  const std::atomic<bool>* stop = nullptr;
};

struct TuneSummary {
  int resumed = 0;           // records of the task read from the log
  int measured = 0;          // configurations measured by this run
  int valid = 0;             // ok results among resumed + measured
  bool exhausted = false;    // the policy had nothing left to propose
  bool interrupted = false;  // options.stop ended the run before `trials`
  std::optional<Config> best;
  double best_s = 0;   // mean time of `best`, seconds
  double seconds = 0;  // wall time of run()
  int total() const { return resumed + measured; }
};

class Tuner {
 public:
  // Everything passed by reference must outlive the tuner.
  Tuner(const ConfigSpace& space, Measurer& measurer, SearchPolicy& policy, TaskKey task,
        TuneOptions options);

  // Resets the policy with options.seed, resumes, and tunes. Throws RecordError for a log that
  // cannot be read or written, or whose records of this task name configurations outside the
  // space; std::invalid_argument for trials < 1 or batch < 1.
  TuneSummary run();

  // The records run() appended (with a log) or would have appended (without), in order.
  const std::vector<Record>& records() const { return records_; }

 private:
  const ConfigSpace& space_;
  Measurer& measurer_;
  SearchPolicy& policy_;
  TaskKey task_;
  TuneOptions options_;
  std::vector<Record> records_;
};

}  // namespace cutune
