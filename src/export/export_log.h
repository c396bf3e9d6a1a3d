#pragma once
// `cutune export`: for each task's best ok record of a tuning log, re-lowers the configuration
// with the record's template, compiles it for the record's architecture and writes the kernel
// (export_manifest.h). Compiling only, so it works without a GPU. This is the one runtime file
// that knows templates: it composes records, kernels and the compiler, and lives in its own
// library (cutune_export) so that cutune_gpu stays template-free.

#include <filesystem>
#include <string>
#include <vector>

namespace cutune {

struct ExportSummary {
  std::vector<std::string> written;  // kernel names
  std::vector<std::string> skipped;  // one line each: task and why
};

// RecordError for an unreadable or malformed log; std::invalid_argument (one line) when the log
// has no ok record; std::runtime_error when a file cannot be written. A task whose best record
// no longer lowers or compiles is skipped with the reason.
ExportSummary export_log(const std::filesystem::path& log, const std::filesystem::path& out_dir);

}  // namespace cutune
