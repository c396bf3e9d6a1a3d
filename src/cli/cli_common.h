#pragma once
// Shared pieces of the cutune commands: the task options every command takes, choosing the
// target, and printing. Errors meant for the user are `UsageError`s (exit code 2).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kernels/template.h"
#include "src/base/errors.h"
#include "src/ir/verify.h"

namespace cutune::cli {

class UsageError : public UserError {
 public:
  using UserError::UserError;
};

// `OP --shape M,N,K [--template NAME] [--arch sm_XX]`, shared by space/show/compile/verify/tune.
struct TaskOptions {
  std::string op;
  std::string shape;
  std::string template_name;
  std::string arch;  // empty: the detected GPU's, else sm_90
  bool json = false;

  void add_to(CLI::App& cmd, bool with_arch = true);
  std::unique_ptr<Template> make() const;
  std::string resolved_arch() const;
  ir::TargetLimits limits() const;
};

// A configuration named on the command line: an index or a JSON object.
Config parse_config(const ConfigSpace& space, const std::string& text);

// Prints a JSON document (pretty) to stdout.
void print_json(const nlohmann::json& j);

// Percentile of a sorted vector (nearest rank).
double percentile(std::vector<double> values, double p);

void add_inspect_commands(CLI::App& app);  // ops, space, show
void add_compile_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_tune_commands(CLI::App& app);     // tune, replay
void add_gpu_commands(CLI::App& app);      // export, bench
void add_suite_commands(CLI::App& app);    // tune-suite
void add_report_command(CLI::App& app);    // report
void add_doctor_command(CLI::App& app);    // doctor

}  // namespace cutune::cli
