#pragma once
// `cutune bench gemm --shape M=lo..hi,N,K --table TABLE.json` (cmd_bench_range.cc).

#include <string>

#include "src/cli/cli_common.h"

namespace cutune::cli {

// UsageError (one line) for a missing or malformed table or an M outside it; NoDeviceError
// without a GPU. `points`: the most points of the range (the M between them are timed too).
void run_bench_range(const TaskOptions& task, const std::string& table_path, int points, int rounds,
                     double seconds, bool no_flush, int device_index);

}  // namespace cutune::cli
