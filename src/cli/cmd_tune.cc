// cutune tune | replay: the tuning engine's commands.

#include "src/cli/cli_common.h"

namespace cutune::cli {

void add_tune_commands(CLI::App& app) {}

}  // namespace cutune::cli
