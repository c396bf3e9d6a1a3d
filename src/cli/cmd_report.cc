// cutune report: one self-contained HTML page about the tasks of one or more tuning logs, with
// plots drawn by gnuplot. What is known about each task's space comes from here (the template
// registry, replayed caches), so that src/report needs neither.

#include <unistd.h>

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "kernels/template.h"
#include "src/base/output_file.h"
#include "src/cli/cli_common.h"
#include "src/records/tuning_log.h"
#include "src/replay/kt_cache.h"
#include "src/replay/replay_space.h"
#include "src/report/gnuplot.h"
#include "src/report/html_report.h"
#include "src/report/task_summary.h"
#include "src/tune/replay_measurer_adapter.h"

namespace cutune::cli {
namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::vector<std::string> logs;
  std::string out;
  bool force = false;
  std::vector<std::string> caches;
  int top = 10;
  int batch = 64;
  bool json = false;
};

void check_out(const ReportArgs& args) {
  const fs::path out(args.out);
  check_output({.path = out, .flag = "--out", .force = args.force}, OutputMode::create);
  std::error_code ec;
  for (const std::string& log : args.logs) {
    if (fs::exists(out, ec) && fs::equivalent(out, log, ec))
      throw UsageError(fmt::format("--out {} is one of the logs; name another file", args.out));
  }
}

// Strictly, as every reader of logs: a malformed line is "path:line: reason".
std::vector<Record> read_logs(const ReportArgs& args, std::vector<std::string>& warnings) {
  std::vector<std::vector<Record>> inputs;
  for (const std::string& log : args.logs) {
    std::error_code ec;
    if (fs::is_directory(log, ec)) throw UsageError(fmt::format("{} is a folder, not a log", log));
    if (!fs::exists(log, ec)) throw UsageError(fmt::format("no such log: {}", log));
    LogReadResult r = read_log(log);
    warnings.insert(warnings.end(), r.warnings.begin(), r.warnings.end());
    inputs.push_back(std::move(r.records));
  }
  return merge_records(inputs);
}

// A replayed cache's space: every valid configuration of it is what random search draws from.
// A cache that matches no task of the logs is a warning, not an error.
std::map<TaskKey, report::SpaceInfo> load_caches(
    const std::vector<std::string>& paths, const std::map<TaskKey, std::vector<Record>>& tasks,
    std::vector<std::string>& warnings) {
  std::map<TaskKey, report::SpaceInfo> spaces;
  for (const std::string& path : paths) {
    const replay::ReplayTask task = replay::ReplayTask::from_cache(replay::load_kt_cache(path));
    const TaskKey key = replay_task_key(task);
    if (!tasks.contains(key)) {
      warnings.push_back(
          fmt::format("--cache {}: no task of the logs is {}", path, key.to_string()));
      fmt::print(stderr, "cutune: warning: {}\n", warnings.back());
      continue;
    }
    report::SpaceInfo info;
    info.kind = report::SpaceInfo::Kind::cache;
    info.population = static_cast<int64_t>(task.summary().points);
    info.size = task.space().size();
    info.source = "cache " + fs::path(path).filename().string();
    for (double t : task.sorted_valid_times()) info.ok_times_s.push_back(t * 1e-3);
    spaces[key] = std::move(info);
  }
  return spaces;
}

report::SpaceInfo space_of(const TaskKey& key, const std::map<TaskKey, report::SpaceInfo>& caches) {
  if (auto it = caches.find(key); it != caches.end()) return it->second;
  report::SpaceInfo info;
  if (key.target_arch == "replay") {
    info.source = "a replayed cache; pass it with --cache for random search over the whole space";
    return info;
  }
  try {
    std::unique_ptr<Template> t = make_template(key.op, key.shape, key.template_name);
    info.kind = report::SpaceInfo::Kind::template_space;
    info.size = t->space().size();
    info.source = "template " + t->name();
  } catch (const TaskError& e) {
    info.source = fmt::format("no template for it here: {}", e.what());
  }
  return info;
}

void run_report(const ReportArgs& args) {
  if (args.top < 0) throw UsageError("--top must be >= 0");
  if (args.batch < 1) throw UsageError("--batch must be >= 1");
  const std::optional<fs::path> gnuplot = report::find_gnuplot();
  if (!gnuplot) {
    throw UsageError(
        fmt::format("gnuplot not found on PATH; the report's plots need it (Debian package {})",
                    report::kGnuplotPackage));
  }
  check_out(args);

  report::PageInfo page;
  page.logs = args.logs;
  const std::vector<Record> records = read_logs(args, page.warnings);
  for (const std::string& w : page.warnings) fmt::print(stderr, "cutune: warning: {}\n", w);
  page.records = static_cast<int64_t>(records.size());
  if (records.empty()) throw UsageError("the logs hold no record");
  page.generated = utc_timestamp_now();

  const std::map<TaskKey, std::vector<Record>> tasks = group_by_task(records);
  const std::map<TaskKey, report::SpaceInfo> caches =
      load_caches(args.caches, tasks, page.warnings);

  std::vector<report::TaskSummary> summaries;
  for (const auto& [key, list] : tasks) {
    summaries.push_back(
        report::summarize_task(key, list, space_of(key, caches),
                               report::SummaryOptions{.top = args.top, .batch = args.batch}));
  }

  const bool progress = ::isatty(2) && !args.json;
  int plots = 0;
  const std::string html = report::render_page(summaries, page, [&](const std::string& script) {
    if (progress) fmt::print(stderr, "\rreport: plot {} of {}", ++plots, 3 * summaries.size());
    return report::run_gnuplot(*gnuplot, script);
  });
  if (progress) fmt::print(stderr, "\n");
  write_output_file({.path = args.out, .flag = "--out", .force = args.force}, html);

  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const report::TaskSummary& s : summaries) list.push_back(report::to_json(s));
    print_json({{"out", args.out},
                {"records", page.records},
                {"tasks", list},
                {"warnings", page.warnings}});
    return;
  }
  for (const report::TaskSummary& s : summaries) {
    std::string best =
        s.best_s() ? fmt::format("best {:.4g} ms", *s.best_s() * 1e3) : "no ok trial";
    if (auto r = s.baseline_ratio()) best += fmt::format(" ({:.2f}x {})", *r, s.baseline->name);
    fmt::print("{}: {} trials, {} ok, {}\n", s.task.to_string(), s.trials, s.ok, best);
  }
  fmt::print("wrote {} ({} task(s), {} records)\n", args.out, summaries.size(), page.records);
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("report",
                         "one self-contained HTML page about tuning logs: best so far, times, top "
                         "configurations, failures, baseline ratio");
  auto args = std::make_shared<ReportArgs>();
  cmd->add_option("logs", args->logs, "tuning logs (their records are merged)")->required();
  cmd->add_option("--out", args->out, "the HTML file to write")->required();
  cmd->add_flag("--force", args->force, "replace --out if it exists");
  cmd->add_option("--cache", args->caches,
                  "Kernel Tuner caches the logs replayed: random search's expectation over "
                  "the whole space");
  cmd->add_option("--top", args->top, "rows of the top-configuration table")->capture_default_str();
  cmd->add_option("--batch", args->batch, "trials per round (the tuner's --batch)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "machine-readable summary on stdout");
  cmd->callback([args] { run_report(*args); });
}

}  // namespace cutune::cli
