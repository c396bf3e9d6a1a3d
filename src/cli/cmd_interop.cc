// `cache LOG --out FILE [--spec SPEC]` and `export LOG --t4 --out FILE`: a log's measurements in the formats
// of other tools (a Kernel Tuner cache, T4 results), written as src/base/output_file.h says.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/base/output_file.h"
#include "src/cli/cli_common.h"
#include "src/cli/cmd_spec.h"
#include "src/records/tuning_log.h"
#include "src/spec/interop.h"
#include "src/spec/kernel_spec.h"

namespace cutune::cli {

namespace {

// Pretty JSON at a path the user named (src/base/output_file.h).
void write_json_file(const OutputTarget& target, const nlohmann::ordered_json& j) {
  write_output_file(target, j.dump(1) + "\n");
}

}  // namespace

std::vector<Record> log_records(const std::string& log, const std::string& task_filter) {
  std::vector<Record> records = read_log(log).records;
  auto groups = group_by_task(records);
  if (groups.empty()) throw UsageError(fmt::format("log '{}' has no records", log));
  if (groups.size() == 1 && task_filter.empty()) return records;
  std::vector<std::string> names;
  for (const auto& [key, recs] : groups) {
    if (key.to_string() == task_filter || key.template_name == task_filter || key.op == task_filter)
      return recs;
    names.push_back(key.to_string());
  }
  throw UsageError(fmt::format("log '{}' holds {} tasks; choose one with --task (one of: {})", log,
                               groups.size(), fmt::join(names, "; ")));
}

namespace {

// The KernelName of the spec at `path`, which must be the spec `task` tuned (on a GPU its name
// is the spec's BenchmarkName, or its KernelName without one; replayed, the cache's kernel
// name); UsageError otherwise.
std::string spec_kernel_name(const std::string& path, const TaskKey& task) {
  require_readable_file(path, "--spec");
  const spec::KernelSpec s = spec::load_kernel_spec(path, false);  // SpecError: exit 2
  const std::string name = s.benchmark_name.empty() ? s.kernel_name : s.benchmark_name;
  // A replayed cache's task is named by the cache's kernel_name: the KernelName.
  if (task.template_name != name && task.template_name != s.kernel_name) {
    throw UsageError(fmt::format("--spec {} is the kernel '{}', the log's task is {}", path, name,
                                 task.to_string()));
  }
  return s.kernel_name;
}

}  // namespace

void add_interop_commands(CLI::App& app) {
  auto* cache = app.add_subcommand("cache",
                                   "write a log's measurements as a Kernel Tuner cache (for replay "
                                   "and Kernel Tuner's simulation mode)");
  auto log = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto task = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  auto spec_path = std::make_shared<std::string>();
  cache->add_option("log", *log, "tuning log (JSON lines)")->required();
  cache->add_option("--out", *out, "the cache file to write (JSON)")->required();
  cache->add_option("--task", *task, "the task, when the log holds several");
  cache->add_flag("--force", *force, "replace --out if it exists");
  cache->add_flag("--json", *json, "machine-readable summary on stdout");
  cache->add_option("--spec", *spec_path,
                    "the T1 spec the log tuned: the cache names its KernelName, as Kernel Tuner "
                    "checks (without it, the task's name: the spec's BenchmarkName)");
  cache->callback([log, out, task, force, json, spec_path] {
    const OutputTarget target{.path = *out, .flag = "--out", .force = *force};
    check_output(target, OutputMode::create);  // before the log is read
    const std::vector<Record> records = log_records(*log, *task);
    replay::KtCache c = spec::records_to_kt_cache(records);
    if (!spec_path->empty()) c.kernel_name = spec_kernel_name(*spec_path, records.front().task);
    write_json_file(target, spec::kt_cache_to_json(c));
    if (*json) {
      print_json({{"log", *log},
                  {"out", *out},
                  {"records_read", records.size()},
                  {"written", c.entries.size()},
                  {"valid", c.valid_count()}});
      return;
    }
    fmt::print("wrote {} configurations ({} valid) to {}\n", c.entries.size(), c.valid_count(),
               *out);
  });
}

namespace spec_form {

// `export LOG --t4 --out FILE`: a log's measurements in the T4 results format.
void run_t4_export(const std::string& log, const std::string& out, const std::string& task,
                   bool force) {
  const OutputTarget target{.path = out, .flag = "--out", .force = force};
  check_output(target, OutputMode::create);  // before the log is read
  std::vector<Record> records = log_records(log, task);
  write_json_file(target, spec::records_to_t4(records));
  fmt::print("wrote {} results to {}\n", records.size(), out);
}

}  // namespace spec_form

}  // namespace cutune::cli
