// cutune export | bench: commands that need the GPU runtime.

#include "src/cli/cli_common.h"

namespace cutune::cli {

void add_gpu_commands(CLI::App& app) {}

}  // namespace cutune::cli
