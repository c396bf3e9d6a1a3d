#pragma once
// Shared pieces of the cutune commands: the task options every command takes, choosing the
// target, and printing. Errors meant for the user are `UsageError`s (exit code 2).

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kernels/template.h"
#include "src/base/errors.h"
#include "src/codegen/cuda_source.h"
#include "src/ir/verify.h"
#include "src/runtime/compile_result.h"

namespace cutune::cli {

class UsageError : public UserError {
 public:
  using UserError::UserError;
};

// Thrown by a command whose outcome (already printed) asks for a nonzero exit code without a
// message, e.g. verify when a configuration failed.
struct ExitStatus {
  int code = 1;
};

// `OP --shape M,N,K [--template NAME] [--arch sm_XX]`, shared by space/show/compile/verify/tune.
struct TaskOptions {
  std::string op;  // a computation (gemm) or an operator name of before (gemm_fp16)
  std::string shape;
  std::string template_name;
  // Task parameters (kernels/template.h, TaskParams); empty: the operator's default's.
  std::string dtype, out_dtype, layout, family;
  std::string epilogue;  // kernels/epilogue.h: "bias,gelu"; empty: none
  std::string arch;  // empty: the detected GPU's, else sm_90
  bool json = false;
  bool runtime_m = false;  // the template of run-time M (a range of M's points)

  // With `or_spec` (the command takes --spec FILE instead, TaskOrSpec), OP and --shape are
  // optional here and checked by the command.
  void add_to(CLI::App& cmd, bool with_arch = true, bool or_spec = false);
  // --dtype, --out-dtype, --layout, --family, --epilogue (add_to registers them too).
  void add_params_to(CLI::App& cmd);
  TaskRequest request() const {
    return {op, dtype, out_dtype, layout, family, template_name, runtime_m, epilogue};
  }
  std::unique_ptr<Template> make() const;
  std::string resolved_arch() const;
  ir::TargetLimits limits() const;
};

// A `--seed`-like option: an unsigned 64-bit integer; a negative value is a UsageError.
CLI::Option* add_seed_option(CLI::App& cmd, uint64_t& seed, const std::string& description,
                             const std::string& name = "--seed");

// For CLI11's check(): a finite number in [least, most] ("must be in [0, 1] (got nan)"; with
// `most` infinite, "must be >= 0 ...").
CLI::Validator number_in(double least, double most);
// A UsageError "NAME WHY" for the first of `names` (options of `cmd`) that its command line
// gave.
void reject_given(const CLI::App& cmd, const std::vector<std::string>& names,
                  const std::string& why);

// UsageError (one line, naming `flag`) unless `path` is a regular file this process can read.
void require_readable_file(const std::string& path, const std::string& flag);
// UsageError unless `path` is a file that can be created or appended to: nothing yet (in an
// existing folder) or a regular file, not a symbolic link, directory, FIFO or device
// (src/base/output_file.h, OutputMode::append).
void require_writable_file(const std::string& path, const std::string& flag);

// UsageError when `tmpl` cannot run on `arch` at all (the tensor-core templates' mma.sync
// m16n8k16 needs sm_80 or newer), with the reason.
void require_arch_supports(const Template& tmpl, const std::string& arch);

// While alive, SIGINT (Ctrl-C) sets flag() instead of ending the process, so that a tuning run
// can finish the batch in flight, log it and print its summary; a second Ctrl-C ends the
// process at once. The previous handler is restored on destruction.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  const std::atomic<bool>* flag() const;
};

// The command line main() received, kept to print "resume with: ..." after an interruption.
void set_command_line(int argc, char** argv);
// That command line with --resume added (and `--log LOG` when `log` is not empty).
std::string resume_command(const std::string& log);

// A configuration named on the command line: an index or a JSON object.
Config parse_config(const ConfigSpace& space, const std::string& text);

// A list of values for people: all of them when there are at most `shown`, else the first
// `shown` and "... (N values)".
std::string values_text(const std::vector<int64_t>& values, size_t shown = 8);

// A compiler's log for people: NUL bytes (NVRTC counts its terminator in the log's size)
// removed, and the first line that reports an error moved to the front, since NVRTC prints
// warnings first and a reader should see why it failed first. Otherwise unchanged.
std::string compile_log_for_people(const std::string& log);

// Prints a JSON document (pretty) to stdout.
void print_json(const nlohmann::json& j);

// Percentile of a sorted vector (nearest rank).
double percentile(std::vector<double> values, double p);

void add_inspect_commands(CLI::App& app);  // ops, space, show
void add_compile_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_tune_commands(CLI::App& app);   // tune, replay
void add_gpu_commands(CLI::App& app);    // export, bench
void add_suite_commands(CLI::App& app);  // tune-suite
void add_report_command(CLI::App& app);  // report
void add_doctor_command(CLI::App& app);  // doctor
void add_sass_command(CLI::App& app);    // sass

// cmd_sass.cc: UsageError (where nvdisasm was looked for) when it is absent; a compiled
// kernel's SASS report as JSON ({"error": ...} when it cannot be disassembled).
void require_disassembler();
nlohmann::json sass_json(const CompileResult& compiled, const LaunchSpec& launch);

}  // namespace cutune::cli
