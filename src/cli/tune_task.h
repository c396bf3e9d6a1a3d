#pragma once
// The one front door of every command that tunes: what a command names (a TaskSource: OP
// --shape, a template measured on the GPU or in the CPU emulator; --spec SPEC.json, a user's
// kernel on the GPU; --replay CACHE, a Kernel Tuner cache answering from its timings) resolved
// into a task. `cutune tune` (cmd_tune.cc), its replay suites and MPI jobs
// (cmd_tune_scaled.cc), each layer of `cutune tune-suite` (cmd_suite.cc) and the study of
// `cutune replay` (cmd_replay.cc) all drive their tasks this way:
//
//   TuneTask t = resolve_tune_task(source, measure, search);  // checks, loads the task
//   std::unique_ptr<Measurer> m = t.make_measurer(0);   // each measuring lane its own
//   t.bind(*m);                              // the key and features for m's device and arch
//   TuningSession session(t.tuning_task(), t.search, {.paths = ..., .featurize = t.featurize});
//
// Several tasks at once (a suite, an MPI job) go through src/cli/suite_tasks.h.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/features.h"
#include "kernels/template.h"
#include "src/cli/cmd_tune.h"
#include "src/distributed/suite_runner.h"
#include "src/measure/measurer.h"
#include "src/records/record.h"
#include "src/replay/replay_space.h"
#include "src/spec/spec_task.h"
#include "src/tune/tuning_session.h"

namespace cutune::cli {

struct TuneTask {
  // The task's source; one is set.
  std::shared_ptr<const Template> tmpl;
  std::shared_ptr<const spec::SpecTask> spec;
  std::shared_ptr<const replay::ReplayTask> replay;
  bool emulated = false;  // a template in the CPU emulator

  // The command's search options with this kind's defaults: on a GPU the end-of-run
  // re-measurement of the 8 fastest, the pipeline and (xgb) the configurations its author
  // would try first; without one, neither.
  SearchOptions search;
  std::optional<double> flops;

  // A measurer of the task (each measuring lane, and under MPI each rank, makes its own).
  // NoDeviceError with what to try without a GPU; UsageError when the GPU cannot set a spec's
  // task up or a template cannot run on the measurer's arch.
  std::function<std::unique_ptr<Measurer>(int lane)> make_measurer;

  // After the first measurer: the key records are written under (its device and arch) and
  // the features (a template's IR features for that arch; the knobs otherwise). UsageError
  // when a template cannot run on `target_arch`.
  void bind(const Measurer& measurer) { bind(measurer.device_name(), measurer.target_arch()); }
  void bind(const std::string& device_name, const std::string& target_arch);
  // Before bind(), the key without the device and arch (a cache's is whole, and a cache's task
  // is bound as it is resolved); features is null.
  TaskKey key;
  std::unique_ptr<cost_model::FeatureExtractor> features;
  RecordFeaturizer featurize;  // places other tasks' records in `features` (transfer)

  const ConfigSpace& space() const;
  TuningTask tuning_task() const { return {key, space(), *features, flops}; }
  // The task for the suite engine, with its seed configurations; points into this task.
  distributed::SuiteTask suite_task() const;
  // Printed before the run (the emulator's caveat); empty for none.
  std::string note() const;
  // Adds this kind's figures to the run's summary (a cache's optimum), "line" for the text.
  void report(nlohmann::json& out, const TuneSummary& summary) const;
};

// UsageError (one line) for flags that do not go together or a task that cannot be made.
// `search` as the command gives it; the task's holds this kind's defaults.
TuneTask resolve_tune_task(const TaskSource& source, const MeasureChoice& measure,
                           SearchOptions search);
// `cutune tune`'s one task.
TuneTask resolve_tune_task(const TuneArgs& args);

}  // namespace cutune::cli
