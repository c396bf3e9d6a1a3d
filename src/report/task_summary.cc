#include "src/report/task_summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "src/records/tuning_log.h"

namespace cutune::report {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool timed_ok(const Record& r) { return r.result.ok() && !r.result.times_s.empty(); }

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Baselines are timed once per worker start and copied into every reply, so the median over
// records is the median over worker starts weighted by how many candidates each measured.
std::optional<Baseline> find_baseline(const std::vector<Record>& records) {
  std::map<std::string, std::vector<double>> by_name;
  for (const Record& r : records) {
    const BaselineFacts& b = r.result.details.baseline;
    if (b.baseline_s && std::isfinite(*b.baseline_s)) {
      by_name[b.name.value_or("baseline")].push_back(*b.baseline_s);
    } else if (b.cublas_time_s && std::isfinite(*b.cublas_time_s)) {
      by_name["cublas"].push_back(*b.cublas_time_s);
    }
  }
  std::optional<Baseline> best;
  for (auto& [name, times] : by_name) {
    std::erase_if(times, [](double t) { return !std::isfinite(t) || t <= 0; });
    if (times.empty()) continue;
    // One baseline kind per task in practice; if several, the one most records carry.
    if (!best || static_cast<int64_t>(times.size()) > best->records)
      best = Baseline{name, median_of(times), static_cast<int64_t>(times.size())};
  }
  return best;
}

}  // namespace

std::optional<double> TaskSummary::best_s() const {
  if (best_so_far_s.empty() || !std::isfinite(best_so_far_s.back())) return std::nullopt;
  return best_so_far_s.back();
}

std::optional<double> TaskSummary::baseline_ratio() const {
  std::optional<double> best = best_s();
  if (!best || !baseline || *best <= 0) return std::nullopt;
  return baseline->time_s / *best;
}

double beaten_share(const std::vector<double>& reference, double t) {
  auto [lo, hi] = std::equal_range(reference.begin(), reference.end(), t);
  const double greater = static_cast<double>(reference.end() - hi);
  const double equal = static_cast<double>(hi - lo);
  return (greater + 0.5 * equal) / static_cast<double>(reference.size());
}

Histogram log_histogram(const std::vector<double>& times_s, int bins) {
  if (bins < 1) throw std::invalid_argument("log_histogram: bins must be >= 1");
  Histogram h;
  if (times_s.empty()) return h;
  auto [mn, mx] = std::minmax_element(times_s.begin(), times_s.end());
  const double lo = std::log10(std::max(*mn, 1e-30)), hi = std::log10(std::max(*mx, 1e-30));
  if (hi <= lo) bins = 1;
  const double width = hi > lo ? (hi - lo) / bins : 1.0;
  for (int i = 0; i <= bins; ++i) h.edges_s.push_back(std::pow(10.0, lo + i * width));
  h.edges_s.front() = *mn;
  h.edges_s.back() = hi > lo ? *mx : *mn;
  h.counts.assign(bins, 0);
  for (double t : times_s) {
    int b = static_cast<int>(std::floor((std::log10(std::max(t, 1e-30)) - lo) / width));
    h.counts[std::clamp(b, 0, bins - 1)]++;
  }
  return h;
}

// The task's trials in proposal order: the log holds them in arrival order (results stream in
// as they finish) and also holds re-measurements, which are not trials.
// Logs written before trial numbers existed keep their file order.
static std::vector<Record> trials_in_order(const std::vector<Record>& records) {
  std::vector<Record> trials;
  bool numbered = true;
  for (const Record& r : records) {
    if (r.kind != RecordKind::trial) continue;
    trials.push_back(r);
    numbered = numbered && r.trial >= 0;
  }
  if (numbered)
    std::stable_sort(trials.begin(), trials.end(),
                     [](const Record& a, const Record& b) { return a.trial < b.trial; });
  return trials;
}

TaskSummary summarize_task(const TaskKey& key, const std::vector<Record>& all_records,
                           const SpaceInfo& space, const SummaryOptions& options) {
  if (options.top < 0) throw std::invalid_argument("--top must be >= 0");
  if (options.batch < 1) throw std::invalid_argument("--batch must be >= 1");
  const std::vector<Record> records = trials_in_order(all_records);
  TaskSummary s;
  s.task = key;
  s.space = space;
  s.batch = options.batch;
  s.trials = static_cast<int64_t>(records.size());

  std::map<MeasureStatus, StatusCount> failures;
  // Per distinct configuration: its best ok time (+inf while it has none).
  std::unordered_map<uint64_t, double> config_best;
  double best = kInf;
  for (const Record& r : records) {
    if (timed_ok(r)) {
      const double t = r.result.median_s();
      best = std::min(best, t);
      s.ok_times_s.push_back(t);
      auto [it, fresh] = config_best.try_emplace(r.config_index, t);
      if (!fresh) it->second = std::min(it->second, t);
    } else {
      config_best.try_emplace(r.config_index, kInf);
      if (!r.result.ok()) {
        StatusCount& c = failures[r.result.status];
        if (c.count++ == 0) c.example_error = r.result.error;
        c.status = r.result.status;
      }
    }
    s.best_so_far_s.push_back(best);
  }
  s.ok = static_cast<int64_t>(s.ok_times_s.size());
  s.distinct_configs = static_cast<int64_t>(config_best.size());
  for (auto& [status, c] : failures) s.failures.push_back(std::move(c));

  for (const Record& r : best_records(all_records, options.top)) {
    TopConfig t{r.config_index, r.knobs, r.result.median_s(), 0};
    for (size_t i = 0; i < records.size(); ++i) {
      if (records[i].config_index == r.config_index && timed_ok(records[i])) {
        t.trial = static_cast<int64_t>(i) + 1;
        break;
      }
    }
    s.top.push_back(std::move(t));
  }

  std::vector<double> reference;
  if (space.kind == SpaceInfo::Kind::cache) {
    s.random_over = "cache";
    s.random = expected_random_best(space.ok_times_s, space.population, static_cast<int>(s.trials));
    reference = space.ok_times_s;
  } else {
    s.random_over = "measured";
    std::vector<double> measured;
    for (const auto& [index, t] : config_best)
      if (std::isfinite(t)) measured.push_back(t);
    s.random = expected_random_best(measured, s.distinct_configs, static_cast<int>(s.trials));
    reference = s.ok_times_s;
  }
  std::sort(reference.begin(), reference.end());
  const int64_t population =
      space.kind == SpaceInfo::Kind::cache ? space.population : s.distinct_configs;
  s.random_trials_to_best = std::numeric_limits<double>::quiet_NaN();
  if (std::isfinite(best)) {
    int64_t good = 0;
    if (space.kind == SpaceInfo::Kind::cache) {
      good = std::upper_bound(reference.begin(), reference.end(), best) - reference.begin();
    } else {
      for (const auto& [index, t] : config_best) good += t <= best;
    }
    if (good > 0) s.random_trials_to_best = double(population + 1) / double(good + 1);
  }

  for (int64_t first = 0; first < s.trials; first += options.batch) {
    const int64_t last = std::min<int64_t>(first + options.batch, s.trials);
    RoundQuality q{first + 1, last, 0, 0, 0, kInf};
    double share_sum = 0;
    for (int64_t i = first; i < last; ++i) {
      const Record& r = records[i];
      if (!timed_ok(r)) {
        q.failed += !r.result.ok();
        continue;
      }
      const double t = r.result.median_s();
      ++q.ok;
      q.best_s = std::min(q.best_s, t);
      if (!reference.empty()) share_sum += beaten_share(reference, t);
    }
    q.quality = q.ok > 0 && !reference.empty() ? share_sum / q.ok
                                               : std::numeric_limits<double>::quiet_NaN();
    s.rounds.push_back(q);
  }

  s.baseline = find_baseline(all_records);
  return s;
}

nlohmann::json to_json(const TaskSummary& s) {
  nlohmann::json failures = nlohmann::json::object();
  for (const StatusCount& c : s.failures) failures[std::string(to_string(c.status))] = c.count;
  nlohmann::json best = nullptr;
  if (!s.top.empty()) {
    const TopConfig& t = s.top.front();
    best = {{"time_ms", t.time_s * 1e3},
            {"config_index", t.index},
            {"knobs", t.knobs},
            {"trial", t.trial}};
  }
  nlohmann::json baseline = nullptr;
  if (s.baseline) {
    baseline = {{"name", s.baseline->name},
                {"time_ms", s.baseline->time_s * 1e3},
                {"records", s.baseline->records}};
    if (auto r = s.baseline_ratio()) baseline["ratio"] = *r;
  }
  nlohmann::json random = nullptr;
  if (std::isfinite(s.random_trials_to_best)) {
    random = {{"over", s.random_over}, {"expected_trials_to_best", s.random_trials_to_best}};
    // Over the measured set the expectation after every trial is the best itself.
    if (s.random_over == "cache" && !s.random.expected_best_s.empty() &&
        std::isfinite(s.random.expected_best_s.back())) {
      random["trials"] = s.random.expected_best_s.size();
      random["expected_best_ms"] = s.random.expected_best_s.back() * 1e3;
    }
  }
  return {{"task", s.task.to_string()},
          {"op", s.task.op},
          {"template", s.task.template_name},
          {"device", s.task.device_name},
          {"trials", s.trials},
          {"ok", s.ok},
          {"distinct_configs", s.distinct_configs},
          {"space_size", s.space.size > 0 ? nlohmann::json(s.space.size) : nlohmann::json()},
          {"best", best},
          {"failures", failures},
          {"baseline", baseline},
          {"random_expectation", random}};
}

}  // namespace cutune::report
