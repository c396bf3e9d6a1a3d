#pragma once
// A Kernel Tuner cache file: the measured results of a (usually brute-force) tuning run, as
// shipped in /work/shared/datasets (see its README for the format). Gzip-compressed or plain
// JSON; the loader tells them apart by the gzip magic bytes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/space/config_space.h"  // ConfigError

namespace cutune::replay {

// One measured configuration.
struct KtEntry {
  std::vector<int64_t> values;   // one per tune parameter, in tune_params_keys order
  bool valid = false;            // false when `time` was a failure string
  double time_ms = 0;            // mean of times_ms; meaningful only when valid
  std::vector<double> times_ms;  // every timed repetition (empty for failed entries)
  std::string error;             // the failure string ("RuntimeFailedConfig", ...) when invalid
  std::optional<double> gflops;  // "GFLOP/s", when recorded
  std::optional<double> gbs;     // "GB/s", when recorded
  // "compile_time" and "verification_time" (milliseconds), when recorded.
  std::optional<double> compile_ms, verification_ms;
};

struct KtCache {
  std::string device_name;
  std::string kernel_name;
  std::vector<int64_t> problem_size;
  std::string objective;  // "time" when absent from the file
  std::vector<std::string> tune_params_keys;
  std::vector<std::vector<int64_t>> tune_params;  // the listed values, in tune_params_keys order
  std::vector<KtEntry> entries;                   // in file order

  int key_position(std::string_view name) const;  // -1 if absent
  size_t valid_count() const;
};

// ConfigError (one line) for an unreadable file, bad gzip, malformed JSON, a missing field,
// or a non-integer parameter value.
KtCache load_kt_cache(const std::string& path);
// Parses the JSON text of a cache (already decompressed); `source` names it in errors.
KtCache parse_kt_cache(const std::string& json_text, const std::string& source = "cache");

}  // namespace cutune::replay
