#pragma once
// Writing a tuning log in the formats other tuners read:
//  - a Kernel Tuner cache (the JSON that `cutune replay`, src/replay/kt_cache.h, and Kernel
//    Tuner's simulation mode read): one entry per measured configuration, keyed by its
//    parameter values joined with ",";
//  - T4, the community's tuning-results format: {"schema_version", "metadata", "results": [
//    {"timestamp", "configuration", "objectives", "times", "invalidity", "correctness",
//    "measurements"}]}.
// Both need a configuration made of integer parameters (a spec task's or a replayed cache's);
// a log of a built-in template, whose split knobs are lists, is refused with one line.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/records/record.h"
#include "src/replay/kt_cache.h"

namespace cutune::spec {

// The records of one task (RecordError if they hold several tasks, none, or a non-integer
// knob). A configuration measured twice keeps its last record. Times are milliseconds.
replay::KtCache records_to_kt_cache(const std::vector<Record>& records);
nlohmann::ordered_json kt_cache_to_json(const replay::KtCache& cache);

nlohmann::ordered_json records_to_t4(const std::vector<Record>& records);

// One T4 result read back (for round trips and for transfer from T4 files).
struct T4Result {
  nlohmann::json configuration;  // parameter -> value
  std::string invalidity;        // "correct", "compile", "runtime", "constraints", "correctness"
  std::vector<double> runtimes_ms;
  double compile_ms = 0;
  std::string timestamp;
  friend bool operator==(const T4Result&, const T4Result&) = default;
};
std::vector<T4Result> parse_t4(const nlohmann::json& j);  // RecordError naming the field

}  // namespace cutune::spec
