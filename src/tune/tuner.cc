#include "src/tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <future>
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
  if (options_.remeasure_top < 0) throw std::invalid_argument("--remeasure-top must be >= 0");
  if (options_.remeasure_top > 0 && options_.remeasure_rounds < 1)
    throw std::invalid_argument("--remeasure-rounds must be >= 1");
  auto start = std::chrono::steady_clock::now();
  const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  policy_.reset(options_.seed);
  TuneSummary s;
  double best_s = std::numeric_limits<double>::infinity();
  // Every ok result of the task (resumed and measured), for the end-of-run re-measurement.
  std::vector<std::pair<double, Config>> ok_times;
  auto account = [&](const Config& c, const MeasureResult& r) {
    if (!r.ok()) return;
    ++s.valid;
    const double t = r.median_s();
    ok_times.emplace_back(t, c);
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

  int64_t next_trial = 0;
  bool log_has_remeasure = false;
  std::unordered_set<uint64_t> resumed_indices;  // configurations of the task in the log
  if (options_.resume && log) {
    LogReadResult old = read_log(options_.log);
    for (const std::string& w : old.warnings) fmt::print(stderr, "cutune: warning: {}\n", w);
    std::vector<const Record*> mine;
    bool all_numbered = true;
    for (const Record& r : old.records) {
      if (r.task != task_) continue;
      if (r.kind == RecordKind::remeasure) {
        log_has_remeasure = true;
        continue;
      }
      if (r.config_index >= space_.size()) {
        throw RecordError(fmt::format("{}: configuration {} is outside the space of {}",
                                      options_.log.string(), r.config_index, task_.to_string()));
      }
      mine.push_back(&r);
      all_numbered = all_numbered && r.trial >= 0;
      next_trial = std::max(next_trial, r.trial + 1);
    }
    // The log holds results in the order they arrived; the policy sees them as proposed.
    if (all_numbered)
      std::stable_sort(mine.begin(), mine.end(),
                       [](const Record* a, const Record* b) { return a->trial < b->trial; });
    std::vector<Config> configs;
    std::vector<MeasureResult> results;
    for (const Record* r : mine) {
      if (!resumed_indices.insert(r->config_index).second) continue;
      configs.push_back(space_.get(r->config_index));
      results.push_back(r->result);
      account(configs.back(), r->result);
    }
    s.resumed = static_cast<int>(configs.size());
    next_trial = std::max<int64_t>(next_trial, s.resumed);
    policy_.observe(configs, results);
  }

  ProgressLine progress(options_.progress ? stderr : nullptr, options_.trials, options_.flops);

  auto make_record = [&](const Config& c, const MeasureResult& result) {
    Record r;
    r.task = task_;
    r.config_index = c.index();
    r.knobs = c.to_json()["knobs"];
    r.result = result;
    r.timestamp = utc_timestamp_now();
    return r;
  };

  // Proposals are timed (a refit and annealing when the model's round ended): the summary's
  // time split, and time_aware_rounds.
  double round_cost_s = 0;       // time_aware_rounds: what a round's proposal costs
  double slowest_propose_s = 0;  // of the proposals since the last batch was measured
  bool first_proposal = true;
  const auto timed_propose = [this, &slowest_propose_s, &s, &first_proposal,
                              &seconds_since](int n) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Config> out = policy_.propose(n);
    const double t = seconds_since(t0);
    slowest_propose_s = std::max(slowest_propose_s, t);
    s.propose_s += t;
    if (first_proposal) s.first_propose_s = t;
    first_proposal = false;
    return out;
  };

  records_.clear();
  std::vector<Config> ahead;  // with options_.pipeline: the next batch, already proposed
  bool have_ahead = false;
  // The seed configurations not yet measured make the first batch.
  std::vector<Config> seeds;
  for (const Config& c : options_.seed_configs) {
    if (static_cast<int>(seeds.size()) >= options_.trials - s.total()) break;
    if (c.index() >= space_.size() || !space_.is_valid(c)) continue;
    if (!resumed_indices.insert(c.index()).second) continue;  // resumed, or a repeat
    seeds.push_back(space_.get(c.index()));
  }
  while (s.total() < options_.trials) {
    if (options_.stop != nullptr && options_.stop->load()) {
      s.interrupted = true;
      break;
    }
    std::vector<Config> batch;
    // The seeds are measured and observed before the policy's first proposal, so that it never
    // proposes one of them again (no lookahead for their batch).
    const bool seed_batch = !seeds.empty();
    if (seed_batch) {
      batch = std::move(seeds);
      seeds.clear();
    } else if (have_ahead) {
      batch = std::move(ahead);
      have_ahead = false;
    } else {
      batch = timed_propose(std::min(options_.batch, options_.trials - s.total()));
    }
    if (batch.empty()) {
      s.exhausted = true;
      break;
    }
    std::future<std::vector<Config>> background;  // background_propose: b+1, meanwhile
    if (options_.pipeline && !seed_batch) {
      const int left = options_.trials - s.total() - int(batch.size());
      if (left > 0 && options_.background_propose) {
        const int n = std::min(options_.batch, left);
        // b+1 goes to prefetch as soon as it is chosen, so that it compiles while b still runs.
        background = std::async(std::launch::async, [this, &timed_propose, n] {
          std::vector<Config> next = timed_propose(n);
          if (!next.empty()) measurer_.prefetch(next);
          return next;
        });
      } else if (left > 0) {
        ahead = timed_propose(std::min(options_.batch, left));
        have_ahead = true;
        if (!ahead.empty()) measurer_.prefetch(ahead);
      }
    }
    const int64_t first_trial = next_trial;
    next_trial += int64_t(batch.size());
    const auto measure_start = std::chrono::steady_clock::now();
    std::vector<std::optional<Record>> arrived(batch.size());
    std::exception_ptr log_error;
    // Each result is logged as it arrives (the sink is never called twice at once, but maybe
    // on a measuring thread: a log error waits for the batch's end to be thrown here).
    std::vector<MeasureResult> results =
        measurer_.measure_streaming(batch, [&](size_t i, const MeasureResult& result) {
          if (i >= batch.size() || arrived[i] || log_error) return;
          Record r = make_record(batch[i], result);
          r.trial = first_trial + int64_t(i);
          try {
            if (log) log->append(r);
          } catch (...) {
            log_error = std::current_exception();
            return;
          }
          arrived[i] = std::move(r);
        });
    const double measure_s = seconds_since(measure_start);
    s.measure_s += measure_s;
    if (background.valid()) {
      ahead = background.get();
      have_ahead = true;
    }
    if (log_error) std::rethrow_exception(log_error);
    if (results.size() != batch.size()) {
      throw std::logic_error(fmt::format("measurer returned {} results for {} configurations",
                                         results.size(), batch.size()));
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!arrived[i]) {  // a measurer that did not stream this one
        Record r = make_record(batch[i], results[i]);
        r.trial = first_trial + int64_t(i);
        if (log) log->append(r);
        arrived[i] = std::move(r);
      }
      records_.push_back(std::move(*arrived[i]));
      account(batch[i], results[i]);
    }
    s.measured += static_cast<int>(batch.size());
    policy_.observe(batch, results);
    if (options_.time_aware_rounds && measure_s > 0) {
      // A proposal that only hands out the rest of a plan is quick; the round's cost is that of
      // the refits, so the estimate is a decaying maximum of the proposals' times.
      round_cost_s = std::max(slowest_propose_s, 0.5 * round_cost_s);
      slowest_propose_s = 0;
      const double per_trial = measure_s / double(batch.size());
      const double want = std::ceil(round_cost_s / per_trial);
      policy_.set_min_round(int(std::min<double>(want, options_.batch)));
    }
    progress.update(s.total(), s.valid, s.measured, best_s);
  }

  // The re-measurement: the first times of a candidate come from a few repeats, next to other
  // candidates; the winner is picked from more repeats, the contenders interleaved.
  const bool remeasure = options_.remeasure_top > 0 && !s.interrupted && !ok_times.empty() &&
                         !(s.measured == 0 && log_has_remeasure);
  if (remeasure) {
    std::stable_sort(ok_times.begin(), ok_times.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Config> top;
    std::unordered_set<uint64_t> picked;
    for (const auto& [t, c] : ok_times) {
      if (int(top.size()) >= options_.remeasure_top) break;
      if (picked.insert(c.index()).second) top.push_back(c);
    }
    const auto remeasure_start = std::chrono::steady_clock::now();
    std::vector<MeasureResult> again = measurer_.remeasure(top, options_.remeasure_rounds);
    s.remeasure_s = seconds_since(remeasure_start);
    if (again.size() != top.size()) {
      throw std::logic_error(fmt::format("measurer re-measured {} results for {} configurations",
                                         again.size(), top.size()));
    }
    double best_again = std::numeric_limits<double>::infinity();
    std::optional<Config> winner;
    for (size_t i = 0; i < top.size(); ++i) {
      Record r = make_record(top[i], again[i]);
      r.kind = RecordKind::remeasure;
      if (log) log->append(r);
      records_.push_back(std::move(r));
      if (again[i].ok() && again[i].median_s() < best_again) {
        best_again = again[i].median_s();
        winner = top[i];
      }
    }
    s.remeasured = int(top.size());
    if (winner) {
      s.best = winner;
      best_s = best_again;
    }
  }
  if (log) log->close();
  progress.update(s.total(), s.valid, s.measured, best_s);
  progress.finish();
  s.best_s = s.best ? best_s : 0.0;
  s.seconds = seconds_since(start);
  return s;
}

nlohmann::json time_split_json(const TuneSummary& s) {
  const double other = s.seconds - s.measure_s - s.remeasure_s -
                       (s.propose_s > s.seconds ? 0.0 : s.propose_s);
  return {{"propose", s.propose_s},
          {"first_propose", s.first_propose_s},
          {"measure", s.measure_s},
          {"remeasure", s.remeasure_s},
          {"other", std::max(0.0, other)}};
}

}  // namespace cutune
