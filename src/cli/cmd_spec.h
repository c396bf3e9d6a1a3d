#pragma once
// The `--spec SPEC.json` forms of space / show / compile / verify / bench / export, `export
// --t4`, and the interoperability command `cache` (cmd_spec.cc; `export --t4` and `cache` in
// cmd_interop.cc). Each of those commands
// registers --spec on itself (TaskOrSpec) and its callback calls the functions below for the
// spec form. `tune --spec` is cmd_tune.cc's (it shares the search options and --replay).

#include <cstdint>
#include <string>
#include <vector>

#include "src/cli/cli_common.h"
#include "src/measure/emulated_verify.h"
#include "src/records/record.h"

namespace cutune {
struct DeviceInfo;
namespace spec {
struct KernelSpec;
class SpecTask;
}
}  // namespace cutune

namespace cutune::cli {

// "cutune: warning: ..." on stderr for each of the spec's warnings (what it says that is not
// used, e.g. a LocalSize under Kernel Tuner's launch rule).
void print_spec_warnings(const spec::KernelSpec& spec);

// What a --spec form reads: the T1 file and the options its command took.
struct SpecOptions {
  std::string spec_path;
  std::string problem_size;  // overrides the spec's ProblemSize
  std::string arch;
  bool json = false;

  spec::KernelSpec load(bool require_kernel_file) const;
  // The task of load(), its warnings printed to stderr (print_spec_warnings).
  spec::SpecTask task(bool require_kernel_file) const;
  std::string resolved_arch() const;
  DeviceInfo device() const;
};

// The two forms of space / show / compile / verify / bench on one command: `OP --shape S
// [--template T]` (an operator) or `--spec FILE [--problem-size P]` (a user's kernel).
struct TaskOrSpec {
  TaskOptions task;  // OP, --shape, --template, --arch, --json
  std::string spec_path;
  std::string problem_size;

  // Registers OP (optional), --shape, --template, --arch, --json, --spec and --problem-size.
  // Without `with_arch` the operator form takes no --arch (only --spec does).
  void add_to(CLI::App& cmd, bool with_arch = true);
  // Whether the command line asked for the spec form. A UsageError (one line) when it gave
  // both OP and --spec or neither, OP without --shape, or an option of the other form: the
  // command's own `operator_only` and `spec_only` besides --shape, --template and
  // --problem-size.
  bool wants_spec(const std::vector<std::string>& operator_only = {},
                 const std::vector<std::string>& spec_only = {}) const;
  // The spec form's options: --spec, --problem-size, --arch and --json.
  SpecOptions spec() const;

 private:
  CLI::App* cmd_ = nullptr;
  bool with_arch_ = true;
};

// The spec forms, called from their commands' callbacks; errors as UsageError (exit 2).
namespace spec_form {

// cmd_spec_reference.cc. Past kMaxEmulatedBytes the emulator would exhaust the host's memory
// (the operator form's limit too); past kMaxDeviceBytes no GPU holds the arguments (an H200 has
// 141 GiB), nor the worker's host copies.
inline constexpr double kMaxEmulatedBytes = 1.0 * (1 << 30);
inline constexpr double kMaxDeviceBytes = 256.0 * (1 << 30);
// A UsageError (one line) when the arguments of `c` would take more than `limit` bytes, before
// any is allocated; `where` names what the limit is of ("the emulator").
void require_fits(const spec::SpecTask& task, const SpecOptions& opts, const Config& c,
                  double limit, const char* where);
// The configuration verify and bench compare with: the spec's Reference.Configuration, else
// every parameter's Default. A UsageError when it violates a condition: no check can stand on a
// configuration the spec itself rules out.
Config reference_config(const spec::SpecTask& task);
// What verify compares with, and with what tolerance: one line for people, and as JSON
// (kind, configuration, kernel or file, tolerance per output, tolerance_source).
struct ReferenceText {
  std::string line;
  nlohmann::json json;
};
ReferenceText describe_reference(const spec::SpecTask& task, const Config& reference);

void run_space(const SpecOptions& opts);
void run_show(const SpecOptions& opts, const std::string& config_text);
void run_compile(const SpecOptions& opts, int sample, int jobs, uint64_t seed);
void run_verify(const SpecOptions& opts, int sample, uint64_t seed,
                const std::string& config_text, const VerifySanitizer& sanitizer);
// `bench --spec SPEC [--config C]... [--log LOG]`.
void run_bench(const SpecOptions& opts, const std::vector<std::string>& configs,
               const std::string& log, double seconds, bool no_flush);
// `export LOG --spec SPEC --out DIR [--task T]`.
void run_export(const SpecOptions& opts, const std::string& log, const std::string& out,
                const std::string& task_filter);
// `export LOG --t4 --out FILE [--task T] [--force]`: FILE is written as
// src/base/output_file.h says (an existing one replaced only with --force).
void run_t4_export(const std::string& log, const std::string& out, const std::string& task,
                   bool force);
}  // namespace spec_form

// The records of `log` (a UsageError when it has none), of the one task it holds or of the
// task named by `task_filter` (its name, template or operator). cmd_interop.cc.
std::vector<Record> log_records(const std::string& log, const std::string& task_filter);

// `cutune cache LOG --out FILE [--force] [--json]`. cmd_interop.cc.
void add_interop_commands(CLI::App& app);

}  // namespace cutune::cli
