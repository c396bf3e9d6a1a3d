#pragma once
// One measured configuration, as stored in the tuning log: which task (operator, shape, device,
// template), which configuration, what the measurement gave and when. Encoded as one line of
// JSON (no newline inside; strings are escaped):
//
//   {"v":1,"task":{"op":"gemm","shape":[1024,1024,1024],"dtype":"float32","arch":"sm_90",
//    "device":"NVIDIA H200","template":"gemm_nn"},"config":{"index":123,"knobs":{...}},
//    "result":{"status":"ok","times":[...],"compile_s":0.3,"timer":"cupti","error":""},
//    "time":"2026-11-30T09:00:00Z"}
//
// "result" may also hold "max_rel_error" (only when checked) and "extra" (the result's
// MeasureDetails as measure_details.h writes them; only when not empty).
// "config" may hold "trial" (the configuration's position in its task's tuning run, in the
// order proposed; logs append in the order results arrive, which under several measuring
// lanes differs), and a record may hold "kind": "remeasure" (the end-of-run re-measurement of
// an already measured configuration, Record::kind). Both are absent in older logs.
// On decode, "task.dtype", "config.knobs", "result.compile_s", "result.timer" and
// "result.error" may be absent and take their defaults; everything else is required. Unknown
// fields are ignored, so later writers may add fields without a version bump.
//
// Timestamps are ISO 8601 UTC, "YYYY-MM-DDTHH:MM:SS" with an optional fraction of a second and
// a final "Z"; utc_timestamp_now() writes milliseconds.

#include <compare>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/errors.h"
#include "src/records/measure_result.h"

namespace cutune {

inline constexpr int kRecordVersion = 1;

// Malformed log input (bad JSON, missing field, wrong type, unknown status, unsupported
// version, unreadable file). The message is one line; the CLI maps it to exit code 2.
class RecordError : public UserError {
 public:
  using UserError::UserError;
};

// What was tuned. Two records belong to the same task when their keys are equal; keys order
// lexicographically field by field (op first).
struct TaskKey {
  std::string op;              // operator name, e.g. "gemm", "conv2d"
  std::vector<int64_t> shape;  // the operator's problem sizes, in its own documented order
  std::string dtype = "float32";
  std::string target_arch;    // e.g. "sm_90"
  std::string device_name;    // as the driver reports it, e.g. "NVIDIA H200"
  std::string template_name;  // the schedule template, e.g. "gemm_nn"

  // "gemm[1024x1024x1024 float32] gemm_nn sm_90 (NVIDIA H200)"
  std::string to_string() const;

  friend auto operator<=>(const TaskKey&, const TaskKey&) = default;
  friend bool operator==(const TaskKey&, const TaskKey&) = default;
};

// What a record is. A `remeasure` record repeats a configuration that has a `trial` record of
// the same task: it does not count as a trial (resume skips it), and where a task has any, the
// final best is chosen among them (best_records).
enum class RecordKind { trial, remeasure };

struct Record {
  int version = kRecordVersion;
  RecordKind kind = RecordKind::trial;
  int64_t trial = -1;  // position in the task's run, proposal order; -1 when unknown
  TaskKey task;
  uint64_t config_index = 0;                        // index in the template's configuration space
  nlohmann::json knobs = nlohmann::json::object();  // the configuration, knob name -> value
  MeasureResult result;
  std::string timestamp;  // ISO 8601 UTC, when the measurement finished

  friend bool operator==(const Record&, const Record&) = default;
};

// Keys in the order shown above, so a line starts with its version.
nlohmann::ordered_json record_to_json(const Record& record);
// RecordError naming the offending field ("result.status") when the value does not match the
// schema above.
Record record_from_json(const nlohmann::json& json);

// One line of compact JSON without the trailing newline. A record that breaks the invariants of
// MeasureResult or has a malformed timestamp is a bug in the caller: std::logic_error.
std::string encode_record(const Record& record);
// RecordError with a one-line reason when the line is not a valid record.
Record decode_record(std::string_view line);

// Now, as "YYYY-MM-DDTHH:MM:SS.mmmZ".
std::string utc_timestamp_now();
bool is_valid_timestamp(std::string_view timestamp);

}  // namespace cutune

template <>
struct std::hash<cutune::TaskKey> {
  size_t operator()(const cutune::TaskKey& key) const noexcept;
};
