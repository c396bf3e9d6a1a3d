#pragma once
// `cutune export --table TABLE.json`: the kernels of a dispatch table that `cutune tune --shape
// M=lo..hi,N,K --table TABLE.json` chose (kernels of run-time M, each serving an interval of
// M), lowered and compiled for the table's architecture, with the table in the manifest
// ("dispatch", export_manifest.h) for cubin_loader.h's DispatchedGemm. Compiling only, so it
// works without a GPU.

#include <filesystem>

#include "src/export/export_log.h"

namespace cutune {

// UserError (one line) for an unreadable or malformed table, or one whose kernel no longer
// lowers or compiles (a table is exported whole or not at all); std::runtime_error when a
// file cannot be written.
ExportSummary export_table(const std::filesystem::path& table,
                           const std::filesystem::path& out_dir);

}  // namespace cutune
