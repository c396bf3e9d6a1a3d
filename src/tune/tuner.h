#pragma once
// The tuning loop, behind a small façade: a policy proposes a batch, the measurer measures it,
// every result is appended to the log as it arrives (Measurer::measure_streaming; so a killed
// run loses only the candidates in flight), the policy observes the batch's results in
// proposal order, until `trials` configurations of the task have been measured or the space
// has nothing left. Each record carries its `trial` (position in proposal order), since the
// log holds them in the order they arrived. Optionally the fastest few are then measured again
// (TuneOptions::remeasure_top) and the best is chosen on that.
//
//   Tuner tuner(space, measurer, policy, task, options);
//   TuneSummary s = tuner.run();
//
// Resume: with options.resume, the log's trial records of this task (same TaskKey) count
// towards `trials` and are observed by the policy first, in trial order; they are never
// measured again. Remeasure records are not trials: they neither count nor are observed.
//
// Commands do not drive this loop directly: they go through TuningSession (tuning_session.h),
// which checks the log, trains the transfer model and builds the policy.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

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
  // At the end (unless interrupted, and unless a resumed run had nothing left to measure and
  // its log already holds a re-measurement), the `remeasure_top` fastest ok configurations of
  // the task, resumed ones included, are measured again `remeasure_rounds` times interleaved
  // (Measurer::remeasure) and logged as `remeasure` records; the summary's best is the
  // fastest of them by median. 0: off.
  int remeasure_top = 0;
  int remeasure_rounds = 3;
  // Propose batch b+1 before batch b is measured and hand it to Measurer::prefetch, so that
  // its compile overlaps b's measurement. The search then sees results one batch later (b+1
  // is chosen on results up to b-1): still deterministic for a seed, but not the same
  // proposals as without. Order: propose b0; [propose b1, prefetch b1, measure b0, observe
  // b0]; [propose b2, prefetch b2, measure b1, observe b1]; ...
  bool pipeline = false;
  // With pipeline: propose b+1 (the policy's refit and annealing) on a thread of its own while
  // b is measured, and hand it to Measurer::prefetch from that thread as soon as it is chosen,
  // so that both the refit and b+1's compile overlap b's measurement. The same records as the
  // synchronous pipeline for a seed. On for GPU runs (the CLI sets it with the pipeline).
  bool background_propose = false;
  // Rounds at least as long to measure as to propose: after each batch, the policy's smallest
  // round becomes ceil(a round's proposal seconds / measured seconds per trial), at most
  // `batch` (SearchPolicy::set_min_round); a round's proposal seconds are a decaying maximum
  // (halved each batch) of the proposals' times, since one that only hands out the rest of a
  // plan costs nothing. Where a trial takes 30 ms and a refit 0.7 s, rounds
  // of 2 would leave the GPU idle most of the time. Wall-clock dependent, so off for replays
  // (their trial counts are the benchmark); on for GPU runs.
  bool time_aware_rounds = false;
  // Configurations measured first, before the policy proposes anything (the template's
  // reference configurations on a GPU: what an expert would try first). Those already in a
  // resumed log, invalid ones and repeats are skipped; the policy observes them like any batch.
  std::vector<Config> seed_configs{};

  // Real measurements (a GPU): the pipeline, its proposals in the background and time-aware
  // rounds together, or none of them (replays and the emulator: their trial counts are the
  // benchmark, and nothing there is worth overlapping).
  void set_pipeline(bool on) { pipeline = background_propose = time_aware_rounds = on; }
};

struct TuneSummary {
  int resumed = 0;           // records of the task read from the log
  int measured = 0;          // configurations measured by this run
  int valid = 0;             // ok results among resumed + measured
  bool exhausted = false;    // the policy had nothing left to propose
  bool interrupted = false;  // options.stop ended the run before `trials`
  int remeasured = 0;         // configurations re-measured at the end
  std::optional<Config> best;
  double best_s = 0;   // median time of `best`, seconds (of its re-measurement, if any)
  double seconds = 0;  // wall time of run()
  // Where run()'s wall time went (seconds): proposing (refits and annealing; with
  // background_propose it overlaps measuring), of which the first proposal, measuring (compile,
  // worker, logging), the end-of-run re-measurement.
  double propose_s = 0, first_propose_s = 0, measure_s = 0, remeasure_s = 0;
  int total() const { return resumed + measured; }
};

// {"propose", "first_propose", "measure", "remeasure", "other"} of a summary, seconds ("other":
// the rest of run(), e.g. reading a log to resume; never below 0).
nlohmann::json time_split_json(const TuneSummary& s);

class Tuner {
 public:
  // Everything passed by reference must outlive the tuner.
  Tuner(const ConfigSpace& space, Measurer& measurer, SearchPolicy& policy, TaskKey task,
        TuneOptions options);

  // Resets the policy with options.seed, resumes, and tunes. Throws RecordError for a log that
  // cannot be read or written, or whose records of this task name configurations outside the
  // space; std::invalid_argument for trials < 1 or batch < 1.
  TuneSummary run();

  // The records run() appended (with a log) or would have appended (without): the trials in
  // proposal order, then any re-measurement.
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
