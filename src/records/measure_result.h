#pragma once
// What a measurer hands back for one configuration: how the attempt ended and, when the kernel
// ran, every timed repeat. A failing candidate is data, not an exception: `status` says how it
// failed and `error` says why in one line.
//
// Invariants (checked when a result is encoded into a record):
//   - every entry of times_s is finite and > 0, in seconds, in the order measured;
//   - compile_s is finite and >= 0, in seconds (0 when nothing was compiled);
//   - max_rel_error is -1 when the output was not checked, else finite and >= 0;
//   - details.other (and each GpuState's) is null or a JSON object.
// A non-ok result may carry times (e.g. wrong_answer still ran); callers that rank by time must
// look at ok() first.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/records/measure_details.h"

namespace cutune {

enum class MeasureStatus {
  ok,
  invalid,        // rejected before compiling, or infeasible in a replayed space
  compile_error,  // NVRTC or ptxas rejected the source
  launch_error,   // the driver refused the launch (resources, launch configuration)
  runtime_error,  // the kernel faulted while running
  timeout,        // compiling or running took longer than allowed
  wrong_answer    // it ran, but its output differs from the reference
};

// Which clock produced times_s.
enum class TimerKind {
  none,        // nothing was timed (the candidate failed before running)
  cupti,       // kernel duration from CUPTI activity records
  cuda_event,  // elapsed time between two CUDA events around the launch
  replay,      // copied from an earlier measurement (replayed space, cache)
  emulator     // wall time of a run in the CPU emulator: NOT a GPU time, never a speed figure
};

// The names used in logs and on the command line: exactly the enumerators' spelling.
std::string_view to_string(MeasureStatus status);
std::string_view to_string(TimerKind timer);
// nullopt for an unknown name; names are case-sensitive.
std::optional<MeasureStatus> parse_measure_status(std::string_view name);
std::optional<TimerKind> parse_timer_kind(std::string_view name);
// "ok, invalid, compile_error, ..." for error messages that list what is accepted.
std::string measure_status_names();
std::string timer_kind_names();

struct MeasureResult {
  MeasureStatus status = MeasureStatus::invalid;
  std::vector<double> times_s;  // every repeat, seconds
  double compile_s = 0;         // NVRTC + ptxas wall time, seconds
  std::string error;            // one line; empty when status is ok
  TimerKind timer = TimerKind::none;
  double max_rel_error = -1;  // largest relative error against the reference; -1 if unchecked
  MeasureDetails details;     // ptxas info, GPU state, statistics: a record's "extra"

  // Median / mean of times_s in seconds; +infinity when there are no times, so that a result
  // without times sorts after every timed one.
  double median_s() const;
  double mean_s() const;
  bool ok() const { return status == MeasureStatus::ok; }

  friend bool operator==(const MeasureResult&, const MeasureResult&) = default;
};

}  // namespace cutune
