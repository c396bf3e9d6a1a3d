#pragma once
// What one `cutune tune` tunes, resolved from what the command names: OP --shape (a template,
// measured on the GPU or in the CPU emulator), --spec SPEC.json (a user's kernel on the GPU)
// or --replay CACHE (a Kernel Tuner cache answering from its timings). The single-process run
// (cmd_tune.cc) and the MPI job (cmd_tune_scaled.cc) drive every kind the same way:
//
//   TuneTask t = resolve_tune_task(args);   // checks the flags, loads the task
//   std::unique_ptr<Measurer> m = t.make_measurer(0);   // each measuring lane its own
//   t.bind(*m);                              // the key and features for m's device and arch
//   TuningSession session(t.tuning_task(), t.search, {.paths = ..., .featurize = t.featurize});

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/features.h"
#include "kernels/template.h"
#include "src/cli/cmd_tune.h"
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

  // A measurer for lane `lane` (under MPI, each rank makes its own). NoDeviceError with what
  // to try without a GPU; UsageError when the GPU cannot set a spec's task up.
  std::function<std::unique_ptr<Measurer>(int lane)> make_measurer;

  // After the first measurer: the key records are written under (its device and arch) and
  // the features (a template's IR features for that arch; the knobs otherwise).
  void bind(const Measurer& measurer);
  TaskKey key;
  std::unique_ptr<cost_model::FeatureExtractor> features;
  RecordFeaturizer featurize;  // places other tasks' records in `features` (transfer)

  const ConfigSpace& space() const;
  TuningTask tuning_task() const { return {key, space(), *features, flops}; }
  // Printed before the run (the emulator's caveat); empty for none.
  std::string note() const;
  // Adds this kind's figures to the run's summary (a cache's optimum), "line" for the text.
  void report(nlohmann::json& out, const TuneSummary& summary) const;
};

// UsageError (one line) for flags that do not go together or a task that cannot be made.
TuneTask resolve_tune_task(const TuneArgs& args);

}  // namespace cutune::cli
