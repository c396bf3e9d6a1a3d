#pragma once
// The tuning façade every command that tunes drives (tune, tune --replay, tune-suite, replay):
// a task, search options and transfer sources in; a policy per run, and for each run on a
// measurer the records it wrote and a summary out. The command builds the Measurer (GPU,
// replayed cache, emulator), so src/tune links no CUDA library.
//
//   TuningSession session(task, search, transfer);      // trains the transfer model once
//   TuningOutcome out = session.run(measurer, log);       // one tuning run
//   auto policy = session.make_policy();                  // or: policies for a replay study
//
// Errors in what the user asked for (an existing log without resume, a log of another task,
// out-of-range options, nothing to transfer from) are UserErrors with one line.

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cost_model/features.h"
#include "src/measure/measurer.h"
#include "src/records/record.h"
#include "src/space/config_space.h"
#include "src/tune/model/model_policy.h"
#include "src/tune/search_policy.h"
#include "src/tune/transfer_model.h"
#include "src/tune/tuner.h"

namespace cutune {

// What is tuned. The space and the features must outlive the session.
struct TuningTask {
  TaskKey key;  // what records are written under
  const ConfigSpace& space;
  const cost_model::FeatureExtractor& features;  // for xgb and transfer learning
  std::optional<double> flops;                   // work of one kernel run, for GFLOP/s
};

// A policy for one task; `transfer` is null when the task learns from no other.
using TaskPolicyFactory = std::function<std::unique_ptr<SearchPolicy>(
    const ConfigSpace& space, const cost_model::FeatureExtractor* features,
    std::shared_ptr<const TransferModel> transfer)>;

// The search as a command asks for it: every tuning command (tune, its MPI and replay suites,
// tune-suite, replay) hands these to the engine whole, through tune_options() and
// policy_factory(), never field by field.
struct SearchOptions {
  TunerKind tuner = TunerKind::xgb;
  ModelPolicyOptions model{};  // xgb only; its plan_size is set to `batch`
  int trials = 200;          // configurations of the task to have measured, resumed included
  int batch = 64;            // configurations per measured batch (and per model refit)
  uint64_t seed = 0;
  // End-of-run re-measurement of the fastest few (TuneOptions::remeasure_top); 0: off.
  int remeasure_top = 0;
  int remeasure_rounds = 3;
  // Propose the next batch on a thread of its own while the current one is measured, so that
  // both the proposal and its compile overlap the measurement, with rounds at least as long to
  // measure as to propose (TuneOptions::set_pipeline; on for the GPU).
  bool pipeline = false;
  // Measured first (TuneOptions::seed_configs): a GPU task's template's reference
  // configurations, with the xgb tuner.
  std::vector<Config> seed_configs{};
  // xgb on a template: the analytical prior of its IR features as the model's margin source
  // (src/tune/prior_margin.h), set in model.prior where the task is bound to a device.
  bool prior = true;

  // UserError naming the option (as its flag) when a value is out of range or NaN.
  void validate() const;

  // The tuner's share: trials, batch, seed, re-measurement, pipeline, seed configurations
  // (the caller adds the log, progress and stop).
  TuneOptions tune_options() const;
  // Policies of these options for any task, the model's rounds of `batch` configurations.
  TaskPolicyFactory policy_factory() const;
};

enum class LogMode {
  fresh,   // the log must not exist yet (or be empty)
  resume,  // continue a log of this task: its records count and are never measured again
  shared,  // one log for many tasks of one run (tune-suite): this task's records resume
};

struct LogOptions {
  std::filesystem::path path;  // empty: no log
  LogMode mode = LogMode::fresh;
};

// Records of other tasks for transfer learning (xgb only): tuning logs and Kernel Tuner
// caches at `paths`, plus `records` already in memory, placed in the task's feature schema by
// `featurize` (records it cannot place are skipped).
struct TransferSources {
  std::vector<std::filesystem::path> paths{};
  std::vector<Record> records{};
  RecordFeaturizer featurize{};
  bool required = true;  // false: nothing usable to learn from means no transfer, not an error
};

struct RunControls {
  bool progress = true;                     // the live line on stderr
  const std::atomic<bool>* stop = nullptr;  // see TuneOptions::stop
};

struct TuningOutcome {
  TuneSummary summary;
  std::vector<Record> records;  // written by this run, in order
};

class TuningSession {
 public:
  TuningSession(TuningTask task, SearchOptions search, TransferSources transfer = {});

  // One tuning run of the task on `measurer`, logged as `log` says.
  TuningOutcome run(Measurer& measurer, const LogOptions& log, RunControls controls = {}) const;
  // A fresh policy with the session's options and transfer model (safe from several threads).
  std::unique_ptr<SearchPolicy> make_policy() const;

  const TuningTask& task() const { return task_; }
  const SearchOptions& search() const { return search_; }
  // The transfer model's tasks and rows; 0 without transfer.
  int transfer_tasks() const;
  int transfer_rows() const;

 private:
  TuningTask task_;
  SearchOptions search_;
};

// The records of tuning logs and Kernel Tuner caches (a cache is a complete log of its task).
// UserError for a path that is missing, a directory or unreadable.
std::vector<Record> read_transfer_sources(const std::vector<std::filesystem::path>& paths);

// Places a record in `space` by its knob values (for replayed spaces, where the same knobs
// mean the same kernel on every GPU); records with a knob or value the space lacks are skipped.
RecordFeaturizer knob_featurizer(const ConfigSpace& space,
                                 const cost_model::FeatureExtractor& features);

// What keeps `log` from being used as `mode` asks for `key`, as one line, or nullopt when
// nothing does: the path is not a regular file (a directory, FIFO or device) or is a symbolic
// link (src/base/output_file.h, OutputMode::append); fresh and the file holds anything; the file is not a
// cutune log; resume and the log has records but none of `key` (the line then names the
// fields in which its closest task differs).
std::optional<std::string> log_problem(const std::filesystem::path& log, LogMode mode,
                                       const TaskKey& key);

}  // namespace cutune
