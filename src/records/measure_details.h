#pragma once
// What a measurement says besides its times: the facts the measurer, the worker and the tuner
// attach to a MeasureResult, typed. On disk (a record's result.extra, and a worker reply's
// extra) they are one flat JSON object whose keys are the member names below unless a comment
// names another key; an absent member (nullopt) is an absent key. Keys this build does not know
// are kept in `other` and written back unchanged, so that a log from an older or newer build
// loses nothing when it is read and written again.
//
// The JSON mapping lives in one place, measure_details.cc: to_json writes the keys in sorted
// order, as every record since version 1 has them; measure_details_from_json checks each known
// key's type and throws std::invalid_argument naming the key when it is wrong. A number that
// was not finite is null in JSON: such a key reads as NaN and is written as null again.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace cutune {

// A median's confidence interval, [lo, hi] in seconds.
using SecondsInterval = std::array<double, 2>;

// One NVML sample of the GPU (the worker's GpuSample as recorded). A failed sample has only
// available (false) and error.
struct GpuState {
  std::optional<bool> available;  // written only when false
  std::optional<std::string> error;
  std::optional<int64_t> sm_clock_mhz;
  std::optional<int64_t> max_sm_clock_mhz;
  std::optional<int64_t> temperature_c;
  std::optional<int64_t> throttle_reasons;  // NVML's clocks-event reason bits
  std::optional<bool> throttled;
  nlohmann::json other;  // keys this build does not know; null or an object

  friend bool operator==(const GpuState&, const GpuState&) = default;
};

// Which GPU measured, and its state around the request.
struct GpuConditions {
  // The CUDA ordinal of the local GPU, or "rank:ordinal" / "rank" once a distributed run has
  // named the process that measured.
  std::optional<std::variant<int64_t, std::string>> device;
  std::optional<GpuState> gpu_before;
  std::optional<GpuState> gpu_after;
  std::optional<bool> throttled;  // either sample saw a slowdown that distorts timings

  // The local ordinal, when device holds one.
  std::optional<int64_t> ordinal() const;

  friend bool operator==(const GpuConditions&, const GpuConditions&) = default;
};

// How the worker's timed runs of one request went (its stop rule, where its time went).
struct TimingStats {
  std::optional<std::string> stop;  // which stop rule ended the timed runs
  std::optional<SecondsInterval> median_ci_s;
  std::optional<double> rel_ci;  // the interval's relative half width; -1 when not finite
  std::optional<int64_t> l2_flush_bytes;
  std::optional<bool> early_stopped;
  std::optional<std::string> timer_note;                 // why the timer fell back to CUDA events
  std::optional<std::map<std::string, double>> phase_s;  // the request's phases, seconds
  std::optional<std::map<std::string, double>> setup_s;  // the task's setup (first reply only)

  friend bool operator==(const TimingStats&, const TimingStats&) = default;
};

// Re-measurement: the rounds whose times a result merges.
struct RoundStats {
  std::optional<int64_t> rounds;                       // interleaved rounds against a baseline
  std::optional<std::vector<double>> round_medians_s;  // each round's median, seconds
  std::optional<bool> mixed_timers;  // rounds timed by different clocks: no ratio may use them
  std::optional<int64_t> remeasure_rounds;  // rounds of the tuner's re-measurement that ran

  friend bool operator==(const RoundStats&, const RoundStats&) = default;
};

// What compiling the candidate said (ptxas), and how.
struct CompileFacts {
  std::optional<int64_t> registers;
  std::optional<int64_t> spill_bytes;
  std::optional<int64_t> static_smem_bytes;
  std::optional<int64_t> cubin_bytes;
  std::optional<bool> compiled_ahead;  // compiled while an earlier candidate was timed

  friend bool operator==(const CompileFacts&, const CompileFacts&) = default;
};

// Which reference checked the candidate, and the library baseline timed beside it.
struct BaselineFacts {
  std::optional<std::string> reference;   // cudnn | cpu | cublas | file | reference kernel | none
  std::optional<std::string> cudnn_note;  // why cuDNN is not the reference, where it is not
  std::optional<std::string> name;        // key "baseline": cudnn, cublas
  std::optional<std::string> baseline_algo;
  std::optional<double> baseline_s;  // the baseline's median, seconds
  std::optional<SecondsInterval> baseline_median_ci_s;
  std::optional<int64_t> baseline_runs;
  std::optional<std::string> baseline_timer;
  std::optional<double> baseline_max_rel_error;  // the baseline's output against the reference
  std::optional<std::string> cudnn_reference_algo;
  std::optional<int64_t> cudnn_graph_plans;
  std::optional<std::string> cudnn_graph_note;
  std::optional<double> cudnn_vs_cpu_max_rel_error;
  std::optional<std::string> cublas_algo;
  std::optional<int64_t> cublaslt_algos;
  std::optional<std::string> cublaslt_note;
  std::optional<double> cublas_time_s;  // older logs' cuBLAS time, seconds

  // Every member set in `newer` replaces this one's.
  void merge(const BaselineFacts& newer);

  friend bool operator==(const BaselineFacts&, const BaselineFacts&) = default;
};

// A run on the CPU emulator instead of a GPU: its times are not GPU times.
struct EmulatorFacts {
  std::optional<bool> emulated;
  std::optional<std::string> time_is;  // what the time means, for a reader of the log
  std::optional<std::string> emulator_status;
  std::optional<double> tolerance;

  friend bool operator==(const EmulatorFacts&, const EmulatorFacts&) = default;
};

// What the fake worker (tests) echoes back about the task it was given.
struct WorkerEcho {
  std::optional<int64_t> pid;
  std::optional<int64_t> setups;
  std::optional<nlohmann::json> task;           // its summary of the task's arguments
  std::optional<nlohmann::json> baseline_spec;  // the task's BaselineSpec as JSON

  friend bool operator==(const WorkerEcho&, const WorkerEcho&) = default;
};

struct MeasureDetails {
  GpuConditions gpu;
  TimingStats timing;
  RoundStats rounds;
  CompileFacts compile;
  BaselineFacts baseline;
  EmulatorFacts emulator;
  WorkerEcho worker;
  nlohmann::json other;  // keys this build does not know; null or an object

  // True when no member is set and `other` holds nothing: the record then has no extra.
  bool empty() const;
  // Every member set in `newer` replaces this one's; newer's unknown keys replace ours.
  void merge(const MeasureDetails& newer);

  friend bool operator==(const MeasureDetails&, const MeasureDetails&) = default;
};

// The flat JSON object (keys sorted), or null when d is empty.
nlohmann::json to_json(const MeasureDetails& d);
nlohmann::json to_json(const GpuState& s);
// Reads what to_json writes; null reads as empty details. `path` names the object in error
// messages ("result.extra"). Throws std::invalid_argument, e.g. "field 'result.extra.rounds'
// must be an integer, got string", for a value that is not an object or a known key of the
// wrong type.
MeasureDetails measure_details_from_json(const nlohmann::json& j, std::string_view path);

}  // namespace cutune
