#include "src/tune/tuner.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>

#include "src/records/tuning_log.h"
#include "src/tune/progress_line.h"

namespace cutune {

Tuner::Tuner(const ConfigSpace& space, Measurer& measurer, SearchPolicy& policy, TaskKey task,
             TuneOptions options)
    : space_(space),
      measurer_(measurer),
      policy_(policy),
      task_(std::move(task)),
      options_(std::move(options)) {}

TuneSummary Tuner::run() {
  if (options_.trials < 1) throw std::invalid_argument("--trials must be >= 1");
  if (options_.batch < 1) throw std::invalid_argument("--batch must be >= 1");
  auto start = std::chrono::steady_clock::now();
  policy_.reset(options_.seed);
  TuneSummary s;
  double best_s = std::numeric_limits<double>::infinity();
  auto account = [&](const Config& c, const MeasureResult& r) {
    if (!r.ok()) return;
    ++s.valid;
    double t = r.mean_s();
    if (t < best_s) {
      best_s = t;
      s.best = c;
    }
  };

  // The writer first: with exclusive_log, a second run on this log stops here, before it has
  // read or measured anything.
  std::optional<LogWriter> log;
  if (!options_.log.empty()) {
    log.emplace(options_.log, LogWriterOptions{.exclusive = options_.exclusive_log});
    for (const std::string& w : log->warnings()) fmt::print(stderr, "cutune: warning: {}\n", w);
  }

  if (options_.resume && log) {
    LogReadResult old = read_log(options_.log);
    for (const std::string& w : old.warnings) fmt::print(stderr, "cutune: warning: {}\n", w);
    std::vector<Config> configs;
    std::vector<MeasureResult> results;
    std::unordered_set<uint64_t> seen;
    for (const Record& r : old.records) {
      if (r.task != task_) continue;
      if (r.config_index >= space_.size()) {
        throw RecordError(fmt::format("{}: configuration {} is outside the space of {}",
                                      options_.log.string(), r.config_index, task_.to_string()));
      }
      if (!seen.insert(r.config_index).second) continue;
      configs.push_back(space_.get(r.config_index));
      results.push_back(r.result);
      account(configs.back(), r.result);
    }
    s.resumed = static_cast<int>(configs.size());
    policy_.observe(configs, results);
  }

  ProgressLine progress(options_.progress ? stderr : nullptr, options_.trials, options_.flops);

  records_.clear();
  while (s.total() < options_.trials) {
    if (options_.stop != nullptr && options_.stop->load()) {
      s.interrupted = true;
      break;
    }
    int want = std::min(options_.batch, options_.trials - s.total());
    std::vector<Config> batch = policy_.propose(want);
    if (batch.empty()) {
      s.exhausted = true;
      break;
    }
    std::vector<MeasureResult> results = measurer_.measure(batch);
    if (results.size() != batch.size()) {
      throw std::logic_error(fmt::format("measurer returned {} results for {} configurations",
                                         results.size(), batch.size()));
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      Record r;
      r.task = task_;
      r.config_index = batch[i].index();
      r.knobs = batch[i].to_json()["knobs"];
      r.result = results[i];
      r.timestamp = utc_timestamp_now();
      if (log) log->append(r);
      records_.push_back(std::move(r));
      account(batch[i], results[i]);
    }
    s.measured += static_cast<int>(batch.size());
    policy_.observe(batch, results);
    progress.update(s.total(), s.valid, s.measured, best_s);
  }
  if (log) log->close();
  progress.update(s.total(), s.valid, s.measured, best_s);
  progress.finish();
  s.best_s = s.best ? best_s : 0.0;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

}  // namespace cutune
