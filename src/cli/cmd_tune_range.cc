// `cutune tune OP --shape M=lo..hi,N,K` (or M=m1,m2,...,N,K): one tuning for a range of token
// counts, ending in a dispatch table (src/tune/dispatch_table.h). The template is the
// operator's of run-time M (TaskParams::runtime_m), so that a kernel chosen at one M serves the
// others. The points are tuned one after another into one log, each learning from the points
// before it (transfer, as tune-suite's layers do); then the best few configurations of every
// point are timed at every point (the matrix, logged too), the fewest kernels within the
// tolerance are chosen, and the table is checked at M between the points (timed, not tuned).

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "src/cli/cmd_tune.h"
#include "src/cli/tune_task.h"
#include "src/measure/emulator_measurer.h"
#include "src/records/tuning_log.h"
#include "src/tune/dispatch_table.h"

namespace cutune::cli {

namespace {

std::vector<Record> read_records(const std::string& path) {
  if (!std::filesystem::exists(path)) return {};
  return read_log(path, {.lenient = true}).records;
}

// The task of the range at M = m: the command's source with that M, of run-time M.
TaskSource at_point(const TaskSource& source, const MRange& range, int64_t m) {
  TaskSource s = source;
  s.op.shape = fmt::format("{},{},{}", m, range.rest[0], range.rest[1]);
  s.op.runtime_m = true;
  return s;
}

// A candidate of the table: a configuration's knobs (the same space at every M).
struct Candidate {
  nlohmann::json knobs;
  std::string text;  // Config::to_string at the first point that had it
};

// Times every candidate at M = m (infinity where it is not valid there or failed), appending
// the records to the log: they are measurements of that point's task like its trials.
std::vector<double> time_candidates(const TuneArgs& args, const MRange& range, int64_t m,
                                    const std::vector<Candidate>& candidates, LogWriter& log) {
  TuneTask task =
      resolve_tune_task(at_point(args.source, range, m), args.measure, args.search.options());
  std::unique_ptr<Measurer> measurer = task.make_measurer(0);
  task.bind(*measurer);
  const ConfigSpace& space = task.space();
  std::vector<Config> batch;
  std::vector<size_t> which;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const Config config = space.from_json({{"knobs", candidates[c].knobs}});
    if (!space.is_valid(config)) continue;
    batch.push_back(config);
    which.push_back(c);
  }
  std::vector<double> times(candidates.size(), std::numeric_limits<double>::infinity());
  const std::vector<MeasureResult> results = measurer->measure(batch);
  for (size_t i = 0; i < results.size(); ++i) {
    Record r;
    r.task = task.key;
    r.config_index = batch[i].index();
    r.knobs = batch[i].to_json()["knobs"];
    r.result = results[i];
    log.append(std::move(r));
    if (results[i].ok()) times[which[i]] = results[i].median_s();
  }
  return times;
}

double best_of(const std::vector<std::vector<double>>& times, size_t p) {
  double best = std::numeric_limits<double>::infinity();
  for (const std::vector<double>& row : times) best = std::min(best, row[p]);
  return best;
}

}  // namespace

void run_tune_range(const TuneArgs& args) {
  if (args.resume) throw UsageError("--resume does not continue a range of M yet; tune it anew");
  if (!args.transfer_from.empty())
    throw UsageError("--transfer-from: a range of M learns from its own points; drop it");
  if (!(args.range.tolerance >= 0 && args.range.tolerance < 10))
    throw UsageError("--tolerance must be in [0, 10)");
  if (args.range.candidates < 1) throw UsageError("--candidates must be at least 1");
  {
    // Only a GEMM's M is a range: the operator's computation decides before its shape is read.
    const ResolvedTemplate r =
        resolve_template(args.source.op.request(), args.source.op.resolved_arch());
    if (r.params.computation != "gemm")
      throw UsageError(fmt::format("--shape {}: a range of M is for gemm, not {}",
                                   args.source.op.shape, r.params.computation));
  }
  const MRange range = parse_m_range(args.source.op.shape, 3, args.range.points);
  const SearchOptions search = args.search.options();

  // The first point names the log: its template, N, K and the range.
  TuneTask first =
      resolve_tune_task(at_point(args.source, range, range.points.front()), args.measure, search);
  std::string log = args.log;
  if (log.empty()) {
    TaskKey key = first.key;
    log = fmt::format("cutune-{}-M{}-{}x{}x{}.jsonl", key.template_name, range.lo, range.hi,
                      range.rest[0], range.rest[1]);
  }
  require_writable_file(log, "--log");
  if (std::optional<std::string> why = log_problem(log, LogMode::fresh, TaskKey{}))
    throw UsageError(*why);
  if (args.log.empty())
    fmt::print(stderr, "records go to {} (name another file with --log)\n", log);
  if (!first.note().empty()) fmt::print(stderr, "{}\n", first.note());

  // 1. The points, one after another, each learning from the points before it.
  InterruptGuard interrupt;
  std::vector<TaskKey> keys;
  std::string device;
  for (size_t i = 0; i < range.points.size(); ++i) {
    const int64_t m = range.points[i];
    TuneTask task = resolve_tune_task(at_point(args.source, range, m), args.measure, search);
    std::unique_ptr<Measurer> measurer = task.make_measurer(0);
    task.bind(*measurer);
    device = task.key.device_name;
    TransferSources transfer;
    if (search.tuner == TunerKind::xgb)
      transfer = {.records = read_records(log), .featurize = task.featurize, .required = false};
    TuningSession session(task.tuning_task(), task.search, std::move(transfer));
    fmt::print(stderr, "[point {}/{}] M={} {}{}\n", i + 1, range.points.size(), m,
               task.key.template_name,
               session.transfer_tasks() > 0
                   ? fmt::format(", transfer from {} point(s)", session.transfer_tasks())
                   : "");
    const TuneSummary s = session
                              .run(*measurer, {log, LogMode::shared},
                                   {.progress = !args.quiet, .stop = interrupt.flag()})
                              .summary;
    keys.push_back(task.key);
    if (s.interrupted) {
      fmt::print(stderr, "interrupted at M={}: its records are in {}\n", m, log);
      throw ExitStatus{130};
    }
  }

  // 2. The candidates: the best few of every point, each once.
  std::vector<Candidate> candidates;
  {
    const std::vector<Record> records = read_records(log);
    for (const TaskKey& key : keys) {
      std::vector<Record> mine;
      for (const Record& r : records)
        if (r.task == key) mine.push_back(r);
      for (const Record& r : best_records(mine, args.range.candidates)) {
        const bool known = std::any_of(candidates.begin(), candidates.end(),
                                       [&](const Candidate& c) { return c.knobs == r.knobs; });
        if (!known) candidates.push_back({r.knobs, r.knobs.dump()});
      }
    }
  }
  if (candidates.empty()) throw UsageError("no configuration ran at any point of the range");

  // 3. The matrix, the choice, and the check between the points.
  LogWriter writer(log);
  std::vector<std::vector<double>> times(candidates.size(),
                                         std::vector<double>(range.points.size()));
  for (size_t p = 0; p < range.points.size(); ++p) {
    fmt::print(stderr, "[matrix {}/{}] M={}: {} candidate{}\n", p + 1, range.points.size(),
               range.points[p], candidates.size(), candidates.size() == 1 ? "" : "s");
    const std::vector<double> t = time_candidates(args, range, range.points[p], candidates, writer);
    for (size_t c = 0; c < candidates.size(); ++c) times[c][p] = t[c];
  }
  for (size_t p = 0; p < range.points.size(); ++p) {
    if (!std::isfinite(best_of(times, p)))
      throw UsageError(fmt::format("no candidate ran at M={} (its records are in {})",
                                   range.points[p], log));
  }
  const std::vector<DispatchSegment> table = choose_dispatch(times, args.range.tolerance);
  const std::vector<MInterval> intervals =
      segment_intervals(table, range.points, range.lo, range.hi);
  const std::vector<int64_t> checks = check_points(range.points);
  std::vector<std::vector<double>> check_times(candidates.size(),
                                               std::vector<double>(checks.size()));
  for (size_t q = 0; q < checks.size(); ++q) {
    fmt::print(stderr, "[check {}/{}] M={}\n", q + 1, checks.size(), checks[q]);
    const std::vector<double> t = time_candidates(args, range, checks[q], candidates, writer);
    for (size_t c = 0; c < candidates.size(); ++c) check_times[c][q] = t[c];
  }
  writer.close();

  // 4. The report.
  nlohmann::json j;
  j["template"] = keys.front().template_name;
  j["op"] = keys.front().op;
  j["device"] = device;
  j["arch"] = keys.front().target_arch;
  j["n"] = range.rest[0];
  j["k"] = range.rest[1];
  j["m_range"] = {range.lo, range.hi};
  j["tolerance"] = args.range.tolerance;
  j["candidates"] = candidates.size();
  j["table"] = nlohmann::json::array();
  for (size_t s = 0; s < table.size(); ++s) {
    // m_tuned: the segment's first point, where export lowers its kernel (any M would do).
    const double t = times[table[s].candidate][table[s].first];
    j["table"].push_back({{"m_lo", intervals[s].lo},
                          {"m_hi", intervals[s].hi},
                          {"m_tuned", range.points[table[s].first]},
                          {"time_ms", t * 1e3},
                          {"knobs", candidates[table[s].candidate].knobs}});
  }
  auto rows = [&](const std::vector<int64_t>& ms_, const std::vector<std::vector<double>>& t) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t p = 0; p < ms_.size(); ++p) {
      const size_t seg = *interval_of(intervals, ms_[p]);
      const double mine = t[table[seg].candidate][p], best = best_of(t, p);
      out.push_back({{"m", ms_[p]},
                     {"kernel", seg},
                     {"time_ms", std::isfinite(mine) ? nlohmann::json(mine * 1e3) : nullptr},
                     {"best_ms", std::isfinite(best) ? nlohmann::json(best * 1e3) : nullptr},
                     {"ratio", std::isfinite(mine) ? nlohmann::json(mine / best) : nullptr}});
    }
    return out;
  };
  j["points"] = rows(range.points, times);
  j["checks"] = rows(checks, check_times);
  j["log"] = log;
  if (device == kEmulatorDevice) j["time_is"] = "CPU emulator wall time, not GPU time";
  if (!args.range.table.empty()) {
    // What `cutune export --table` reads: the table with its task.
    std::ofstream out(args.range.table);
    out << j.dump(2) << "\n";
    if (!out) throw UsageError(fmt::format("--table {}: cannot write it", args.range.table));
  }
  if (args.search.json) {
    print_json(j);
    return;
  }
  fmt::print("{} M={}..{} N={} K={} on {}: {} points, {} candidates, tolerance {:.0f}%\n",
             j["template"].get<std::string>(), range.lo, range.hi, range.rest[0], range.rest[1],
             device, range.points.size(), candidates.size(), args.range.tolerance * 100);
  fmt::print("dispatch table: {} kernel{}\n", table.size(), table.size() == 1 ? "" : "s");
  for (size_t s = 0; s < table.size(); ++s) {
    fmt::print("  #{} M {}..{}: {}\n", s, intervals[s].lo, intervals[s].hi,
               candidates[table[s].candidate].knobs.dump());
  }
  auto print_rows = [](const char* title, const nlohmann::json& r) {
    if (r.empty()) return;
    fmt::print("{}\n  {:>6} {:>7} {:>10} {:>10} {:>7}\n", title, "M", "kernel", "table ms",
               "best ms", "ratio");
    for (const nlohmann::json& row : r) {
      auto num = [](const nlohmann::json& v) {
        return v.is_null() ? std::string("-") : fmt::format("{:.4g}", v.get<double>());
      };
      fmt::print("  {:>6} {:>7} {:>10} {:>10} {:>7}\n", row["m"].get<int64_t>(),
                 fmt::format("#{}", row["kernel"].get<size_t>()), num(row["time_ms"]),
                 num(row["best_ms"]), num(row["ratio"]));
    }
  };
  print_rows("tuned points:", j["points"]);
  print_rows("between the points (timed, not tuned):", j["checks"]);
  if (j.contains("time_is")) fmt::print("times: {}\n", j["time_is"].get<std::string>());
  if (!args.range.table.empty()) fmt::print("table: {}\n", args.range.table);
  fmt::print("log: {}\n", log);
}

}  // namespace cutune::cli
