#pragma once
// What the report shows about one task, computed from its records alone (plus what the caller
// knows about the task's whole space): a plain value that the HTML page, the plots and --json
// all read.
//
// A trial is one record, in the order given (log order; merged logs ordered by timestamp). A
// record's time is its median (MeasureResult::median_s), as everywhere in cutune's ranking.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/records/record.h"
#include "src/report/random_expectation.h"

namespace cutune::report {

// What is known about the space a task was searched in.
struct SpaceInfo {
  enum class Kind {
    unknown,        // nothing: random search's expectation is over the measured set
    cache,          // a replayed Kernel Tuner cache: the whole space and every time are known
    template_space  // a schedule template: the size is known, its times only where measured
  };
  Kind kind = Kind::unknown;
  uint64_t size = 0;   // configurations in the space (0: unknown)
  std::string source;  // where it came from, for the page ("cache RTX_3090.json.gz")
  // Kind::cache only: the population random search draws from (every cache entry of the
  // space, ok or failed) and the times of its ok entries, seconds.
  int64_t population = 0;
  std::vector<double> ok_times_s;
};

struct StatusCount {
  MeasureStatus status = MeasureStatus::ok;
  int64_t count = 0;
  std::string example_error;  // the first record's error line
};

struct TopConfig {
  uint64_t index = 0;
  nlohmann::json knobs;
  double time_s = 0;
  int64_t trial = 0;  // 1-based trial at which this time was first recorded
};

// One round of the tuner: `batch` consecutive trials. Records hold no model predictions, so the
// model's ranking accuracy is judged by a proxy: how good the candidates it chose to measure
// were. quality = the mean, over the round's ok candidates, of the share of a reference set
// of times that the candidate beats (ties count one half). The reference is the whole cache
// where known, else every ok trial of the task. Random proposals score 0.5 in expectation.
struct RoundQuality {
  int64_t first_trial = 0, last_trial = 0;  // 1-based, inclusive
  int64_t ok = 0, failed = 0;
  double quality = 0;  // NaN when the round has no ok candidate
  double best_s = 0;   // the round's fastest ok time; +inf when none
};

// The speed baseline (cuBLAS or cuDNN) the measurements carried in their details:
// baseline.baseline_s (named by baseline.name) or baseline.cublas_time_s.
struct Baseline {
  std::string name;   // "cudnn", "cublas"
  double time_s = 0;  // median over the records that carry it
  int64_t records = 0;
};

struct TaskSummary {
  TaskKey task;
  SpaceInfo space;
  int64_t trials = 0;
  int64_t ok = 0;
  int64_t distinct_configs = 0;
  std::vector<StatusCount> failures;  // non-ok statuses that occur, in enum order
  std::vector<double> best_so_far_s;  // [t - 1]: best time after t trials; +inf before any ok
  std::vector<double> ok_times_s;     // every ok trial's time, in trial order
  std::vector<TopConfig> top;         // fastest distinct configurations, fastest first
  // Random search's expectation after k = 1 .. trials draws, over `random_over`.
  RandomCurve random;
  std::string random_over;  // "cache" (the whole space) or "measured" (this task's configurations)
  // The expected number of random draws to reach a time as good as this search's best:
  // (P + 1) / (b + 1), P the population and b how many of it are at least that good (the
  // expected position of the first of b marked items in a random order of P). NaN without an
  // ok trial.
  double random_trials_to_best = 0;
  int batch = 0;
  std::vector<RoundQuality> rounds;
  std::optional<Baseline> baseline;

  std::optional<double> best_s() const;
  // baseline / best: above 1 means the tuned kernel is faster.
  std::optional<double> baseline_ratio() const;
};

struct SummaryOptions {
  int top = 10;    // rows of the top-configuration table
  int batch = 64;  // trials per round (the tuner's --batch)
};

// `records` are the task's records in trial order (all with task == key). The expectation is
// over the cache when space.kind == cache, else over the task's distinct measured
// configurations (each with its best ok time, or failed when it has none).
// std::invalid_argument for top < 0 or batch < 1.
TaskSummary summarize_task(const TaskKey& key, const std::vector<Record>& records,
                           const SpaceInfo& space, const SummaryOptions& options);

// The share of `reference` that `t` beats: (#{r > t} + #{r == t} / 2) / |reference|.
// `reference` sorted ascending and not empty.
double beaten_share(const std::vector<double>& reference, double t);

// Equal-width bins of log10(time) between the smallest and largest time.
struct Histogram {
  std::vector<double> edges_s;  // bins + 1 edges, ascending, seconds
  std::vector<int64_t> counts;  // per bin; a time equal to an inner edge goes to the upper bin
};
// Empty for no times; one bin when all times are equal. bins >= 1.
Histogram log_histogram(const std::vector<double>& times_s, int bins);

// The --json summary of one task: trials, ok, best (time, configuration, trial), failures by
// status, baseline and ratio, random search's expected trials to match the best (and, over a
// cache, its expected best after as many trials as the search made).
nlohmann::json to_json(const TaskSummary& summary);

}  // namespace cutune::report
