#include "src/tune/replay_study.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "src/tune/replay_measurer_adapter.h"

namespace cutune {

namespace {

std::vector<double> run_one_seed(const replay::ReplayTask& task, SearchPolicy& policy,
                                 const StudyOptions& options, uint64_t seed, double optimum_ms) {
  ReplayMeasurerAdapter measurer(task, options.noise, seed);
  policy.reset(seed);
  policy.set_budget(options.trials);
  std::vector<double> curve;
  curve.reserve(options.trials);
  double best_measured = std::numeric_limits<double>::infinity();
  double ratio = 0;
  while (static_cast<int>(curve.size()) < options.trials) {
    int want = std::min(options.batch, options.trials - static_cast<int>(curve.size()));
    std::vector<Config> batch = policy.propose(want);
    if (batch.empty()) break;
    std::vector<MeasureResult> results = measurer.measure(batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (results[i].ok() && results[i].mean_s() < best_measured) {
        best_measured = results[i].mean_s();
        ratio = optimum_ms / task.find(batch[i])->time_ms;
      }
      curve.push_back(ratio);
    }
    policy.observe(batch, results);
  }
  return curve;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Throughputs of the space's valid configurations, ascending; failed or missing ones are 0.
std::vector<double> sorted_throughputs(const replay::ReplayTask& task) {
  replay::ReplaySummary s = task.summary();
  std::vector<double> times = task.sorted_valid_times();
  std::vector<double> v(s.points - std::min<uint64_t>(s.points, times.size()), 0.0);
  for (auto it = times.rbegin(); it != times.rend(); ++it) v.push_back(1.0 / *it);
  return v;
}

}  // namespace

double StudyResult::median_ratio_at(int trials) const {
  std::vector<double> at;
  for (const auto& c : curves) {
    if (c.empty()) {
      at.push_back(0);
    } else {
      at.push_back(c[std::min<size_t>(trials, c.size()) - 1]);
    }
  }
  return median(at);
}

std::vector<std::optional<int>> StudyResult::trials_to(double fraction) const {
  std::vector<std::optional<int>> out;
  for (const auto& c : curves) {
    std::optional<int> t;
    for (size_t i = 0; i < c.size(); ++i) {
      if (c[i] >= fraction) {
        t = static_cast<int>(i + 1);
        break;
      }
    }
    out.push_back(t);
  }
  return out;
}

std::optional<double> StudyResult::median_trials_to(double fraction) const {
  std::vector<double> v;
  for (std::optional<int> t : trials_to(fraction)) {
    v.push_back(t ? double(*t) : std::numeric_limits<double>::infinity());
  }
  if (v.empty()) return std::nullopt;
  double m = median(v);
  if (!std::isfinite(m)) return std::nullopt;
  return m;
}

StudyResult run_replay_study(const replay::ReplayTask& task, const PolicyFactory& make_policy,
                             const StudyOptions& options,
                             const std::function<void(int, int)>& on_seed_done) {
  if (options.trials < 1 || options.seeds < 1 || options.batch < 1) {
    throw std::invalid_argument("--trials, --seeds and --batch must be >= 1");
  }
  auto start = std::chrono::steady_clock::now();
  StudyResult result;
  result.optimum_ms = task.summary().best_time_ms;
  if (result.optimum_ms <= 0) throw std::invalid_argument("the cache has no valid measurement");
  result.curves.resize(options.seeds);

  std::atomic<int> next{0};
  std::mutex done_mutex;
  int done = 0;
  auto worker = [&] {
    std::unique_ptr<SearchPolicy> policy = make_policy();
    for (int s; (s = next++) < options.seeds;) {
      result.curves[s] =
          run_one_seed(task, *policy, options, options.first_seed + s, result.optimum_ms);
      std::lock_guard lock(done_mutex);
      ++done;
      if (on_seed_done) on_seed_done(done, options.seeds);
    }
  };
  int threads = std::clamp(options.threads, 1, options.seeds);
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

double expected_random_ratio(const replay::ReplayTask& task, int n) {
  std::vector<double> v = sorted_throughputs(task);
  const int64_t N = static_cast<int64_t>(v.size());
  if (N == 0 || v.back() <= 0) return 0;
  if (n >= N) return 1.0;
  // P(max = v_(i)) = C(i-1, n-1) / C(N, n) for i = n..N (1-based), in log space.
  auto log_choose = [](double a, double b) {
    return std::lgamma(a + 1) - std::lgamma(b + 1) - std::lgamma(a - b + 1);
  };
  double log_total = log_choose(double(N), double(n));
  double e = 0;
  for (int64_t i = n; i <= N; ++i) {
    e += v[i - 1] * std::exp(log_choose(double(i - 1), double(n - 1)) - log_total);
  }
  return e / v.back();
}

double expected_random_trials_to(const replay::ReplayTask& task, double fraction) {
  std::vector<double> v = sorted_throughputs(task);
  if (v.empty() || v.back() <= 0) return std::numeric_limits<double>::infinity();
  double threshold = fraction * v.back();
  auto k = std::count_if(v.begin(), v.end(), [&](double t) { return t >= threshold; });
  return double(v.size() + 1) / double(k + 1);
}

replay::KtCache make_needle_cache(replay::KtCache cache, double plateau, double neighbour,
                                  NeedleInfo* info) {
  const replay::KtEntry* best = nullptr;
  for (const replay::KtEntry& e : cache.entries) {
    if (e.valid && (!best || e.time_ms < best->time_ms)) best = &e;
  }
  if (!best) throw std::invalid_argument("the cache has no valid measurement");
  const std::vector<int64_t> opt = best->values;
  const double t0 = best->time_ms;
  auto changes = [&](const replay::KtEntry& e) {
    int d = 0;
    for (size_t k = 0; k < opt.size(); ++k) d += e.values[k] != opt[k];
    return d;
  };
  auto slow_to = [](replay::KtEntry& e, double t) {
    double f = t / e.time_ms;
    e.time_ms = t;
    for (double& v : e.times_ms) v *= f;
    if (e.gflops) *e.gflops /= f;
    if (e.gbs) *e.gbs /= f;
  };
  NeedleInfo out;
  out.distance = std::numeric_limits<int>::max();
  for (replay::KtEntry& e : cache.entries) {
    if (!e.valid) continue;
    int d = changes(e);
    if (d == 0) continue;
    if (d == 1) {
      if (t0 / e.time_ms > neighbour) {
        slow_to(e, t0 / neighbour);
        ++out.slowed_neighbours;
      }
      continue;
    }
    if (t0 / e.time_ms >= plateau) {
      slow_to(e, t0 / plateau);
      ++out.plateau;
      out.distance = std::min(out.distance, d);
    }
  }
  if (info) *info = out;
  return cache;
}

}  // namespace cutune
