// The cost of one round of the model-based tuner: fit the ranking model on 1,000 records,
// anneal 128 chains (64 with the cascade) x 500 steps (no early stop), take a batch of 64.
// By default a fit from scratch on 512 records or more is split over two rounds (half of each
// booster's trees in the cold round, the rest in the next: --warm-rounds 1 shows both;
// --split-refit 0 fits whole).
// One thread; times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that other
// processes on the core do not count; the wall-clock time is printed beside it.
//
//   tune_round [--features knobs|ir] [--cache FILE] [--shape M,N,K] [--records 1000]
//              [--repeats 3] [--rounds 150] [--warm-trees 15]
//              [--chains 128] [--steps 500] [--early-stop 0] [--temp 1] [--warm-rounds 1]
//              [--ensemble 5] [--split-refit 512] [--max-tree-growth 4] [--cascade K]
//              [--cascade-ensemble 5] [--compare K] [--loop TRIALS --seeds N]
//              [--pipeline TRIALS --seeds N --trial-ms 28 --compile-ms 7]
//
// --rounds: boosting rounds (trees) of each booster (the tuner's default: 150).
// --warm-trees: ModelPolicyOptions::warm_trees (default 15: the warm round continues the
// boosters; 0: every round fits them from scratch).
// --warm-rounds: rounds after the cold one, each 64 records later.
// --ensemble: the main model's boosters (ModelPolicyOptions::ensemble, default 5).
// --split-refit N: a fit from scratch on N records or more grows a share of each booster's
// trees, the next refits the rest (RefitOptions::split_from, default 512; 0: off);
// --split-parts P: over P rounds in all (RefitOptions::split_parts, default 4).
// --max-tree-growth G: a refit that would take a booster past G times its trees at a fit from
// scratch fits from scratch (RefitOptions::max_tree_growth, default 4; 0: no cap).
// --chains, --steps, --early-stop, --temp (starting temperature): the annealing's (early
// stop 0: off, as by default here).
// --cascade K: the annealing scores its steps with a knob-feature surrogate and hands its K
// best to the main model (ModelPolicyOptions::cascade; 0: off; by default the tuner's: 1000
// with IR features, off with knob features);
// --cascade-ensemble, --cascade-rounds, --cascade-warm: the surrogate's boosters, trees at a
// fit from scratch and trees a warm fit adds (0: the main model's).
// --cascade-chains: at most this many annealing chains while the cascade is on (default the
// tuner's, 64; 0: --chains).
// --compare K: each repeat runs a policy without and one with a cascade of K from the same
// records and seed, and prints the overlap of their batches, the main model's mean
// acquisition of each batch's best half, and the batches' true throughput (best and mean:
// the cache's, or the synthetic label's); in warm rounds both observe the full search's batch.
// --loop TRIALS: instead, tuning runs of TRIALS trials from nothing (the tuner's proposals,
// measured by the cache or the synthetic label), --seeds of them, full search against the
// cascade of --cascade K (default 1000); prints the best true throughput after 64, 128, ...
// trials.
// --pipeline TRIALS: instead, GPU tuning runs of TRIALS trials (the Tuner, batches of 64,
// --seeds of them) on a simulated GPU: --trial-ms in the worker a trial (default 28, the
// H200's fp32 GEMM 1024^3 records), --compile-ms of NVRTC wall time a configuration unless
// prefetched (default 7: 0.11 CPU-s a configuration on 16 cores); without the pipeline, with
// it, and with its proposals in the background (TuneOptions::set_pipeline, the GPU default);
// prints wall time, trials/s and where the time went.
// --objective knobs|ir (IR features only): the synthetic label, a sum over knobs of a
// log-distance from a preferred value (the default), or an emulated time from the IR
// (roofline, occupancy, waves; see IrObjective).
// Each round also prints the feature vectors it computed (distinct configurations new to the
// policy's cache) and the CPU time they took, measured around the extractor.
//
// knobs: a replayed cache (default gemm/RTX_3090) with its measured times and the tuner's
// knob features. ir: the GEMM template (default 1024^3) with the IR features; its records'
// labels are synthetic (a smooth function of the knobs, for timing only: no GPU here).
// Each repeat is a fresh policy: "cold" is its first round (every feature extracted anew),
// "warm" the next one after 64 more records (features memoised by configuration index, the
// chains continuing where they stopped), the steady state of a tuning run.

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "bench/bench_cli.h"
#include "cost_model/features.h"
#include "kernels/template.h"
#include "src/replay/kt_cache.h"
#include "src/tune/model/model_policy.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/tuner.h"

using namespace cutune;

namespace {

double now(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}
double cpu_now() { return now(CLOCK_THREAD_CPUTIME_ID); }

double wall_now() { return now(CLOCK_MONOTONIC); }

// The extractor under test, counting its calls and their thread CPU time.
class TimedFeatures final : public cost_model::FeatureExtractor {
 public:
  explicit TimedFeatures(std::unique_ptr<cost_model::FeatureExtractor> inner)
      : inner_(std::move(inner)) {}
  std::string schema() const override { return inner_->schema(); }
  int size() const override { return inner_->size(); }
  void extract(const Config& config, std::span<float> out) const override {
    double t0 = cpu_now();
    inner_->extract(config, out);
    seconds_ += cpu_now() - t0;
    ++calls_;
    unbuildable_ += !out.empty() && std::isnan(out[0]);
  }
  std::vector<std::string> names() const override { return inner_->names(); }

  mutable double seconds_ = 0;
  mutable long calls_ = 0;
  mutable long unbuildable_ = 0;  // NaN vectors: the template threw

 private:
  std::unique_ptr<cost_model::FeatureExtractor> inner_;
};

// A synthetic but not trivial time for a template configuration: log-distance of each knob
// value from a per-knob preferred value, plus a failure now and then.
MeasureResult synthetic_result(const Config& c) {
  MeasureResult r;
  if (c.index() % 13 == 0) {
    r.status = MeasureStatus::runtime_error;
    r.error = "synthetic failure";
    return r;
  }
  double t = 1.0;
  for (size_t k = 0; k < c.entities().size(); ++k) {
    double v = std::log2(1.0 + double(c.get(static_cast<int>(k))));
    double pref = 1.0 + double(k % 4);
    t += 0.1 * (v - pref) * (v - pref);
  }
  r.status = MeasureStatus::ok;
  r.timer = TimerKind::replay;
  r.times_s = {t * 1e-3};
  return r;
}

// An emulated time from the configuration's IR (the "ir" objective): a roofline of the
// launch's floating-point work and global traffic, slowed by low occupancy and by the last
// wave's idle slots, plus shared-memory traffic; a kernel that fits no block on an SM, or
// that the template cannot build, fails. Unlike the knob objective above it is not a sum of
// per-knob terms: knob features must learn it through the IR's products and thresholds.
class IrObjective {
 public:
  explicit IrObjective(const Template& tmpl)
      : features_(cost_model::make_ir_features(tmpl, ir::TargetLimits{})) {
    std::vector<std::string> names = features_->names();
    auto col = [&](std::string_view n) {
      auto it = std::find(names.begin(), names.end(), "kernel." + std::string(n));
      if (it == names.end()) throw std::runtime_error("IR feature kernel." + std::string(n));
      return static_cast<size_t>(it - names.begin());
    };
    flops_ = col("float_ops");
    bytes_ = col("global_bytes");
    shared_ = col("shared_bytes_touched");
    occupancy_ = col("occupancy");
    wave_efficiency_ = col("wave_efficiency");
    waves_ = col("waves");
  }
  MeasureResult operator()(const Config& c) const {
    std::vector<float> x(features_->size());
    features_->extract(c, x);
    MeasureResult r;
    auto unlog = [&](size_t k) { return std::exp2(double(x[k])) - 1.0; };
    const double occ = x[occupancy_];
    if (std::isnan(x[0]) || !(occ > 0)) {
      r.status = MeasureStatus::runtime_error;
      r.error = "emulated failure";
      return r;
    }
    double t = std::max(unlog(flops_) / 100e12, unlog(bytes_) / 0.9e12) /
                   (std::max(1e-3, double(x[wave_efficiency_])) * std::min(1.0, 0.05 + 2.0 * occ)) +
               unlog(shared_) / 12e12 + 2e-6 * unlog(waves_);
    r.status = MeasureStatus::ok;
    r.timer = TimerKind::replay;
    r.times_s = {t};
    return r;
  }

 private:
  std::unique_ptr<cost_model::FeatureExtractor> features_;
  size_t flops_, bytes_, shared_, occupancy_, wave_efficiency_, waves_;
};

// A GPU run's clock without a GPU (--pipeline): each configuration costs `compile_s` of NVRTC
// wall time unless a prefetch compiled it already, and `trial_s` in the worker; a batch's
// compile streams into its measurement (as GpuMeasurer's pipeline does), so it takes
// max(compile, run) plus the first compile. prefetch() compiles on a thread of its own and may
// be called during a measurement; the results are `truth`'s, at once.
class SimulatedGpu final : public Measurer {
 public:
  SimulatedGpu(std::function<MeasureResult(const Config&)> truth, double trial_s, double compile_s)
      : truth_(std::move(truth)), trial_s_(trial_s), compile_s_(compile_s) {}
  ~SimulatedGpu() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (prefetch_.joinable()) prefetch_.join();
  }

  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (prefetch_.joinable() &&
          std::any_of(batch.begin(), batch.end(),
                      [&](const Config& c) { return prefetching_.contains(c.index()); }))
        prefetch_.join();
    }
    size_t cold = 0;
    {
      std::lock_guard<std::mutex> lock(compiled_mutex_);
      for (const Config& c : batch) cold += !compiled_.contains(c.index());
    }
    const double run_s = double(batch.size()) * trial_s_;
    const double compile_s = double(cold) * compile_s_;
    sleep(std::max(run_s, compile_s) + (cold > 0 ? compile_s_ : 0.0));
    std::vector<MeasureResult> out;
    for (const Config& c : batch) out.push_back(truth_(c));
    return out;
  }

  void prefetch(const std::vector<Config>& next) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (prefetch_.joinable()) prefetch_.join();
    prefetching_.clear();
    for (const Config& c : next) prefetching_.insert(c.index());
    prefetch_ = std::thread([this, next] {
      sleep(double(next.size()) * compile_s_);
      std::lock_guard<std::mutex> done(compiled_mutex_);
      for (const Config& c : next) compiled_.insert(c.index());
    });
  }

  std::string device_name() const override { return "simulated GPU"; }
  std::string target_arch() const override { return "sm_90"; }

 private:
  static void sleep(double seconds) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }

  std::function<MeasureResult(const Config&)> truth_;
  double trial_s_, compile_s_;
  std::mutex mutex_;  // prefetch_ and prefetching_
  std::thread prefetch_;
  std::unordered_set<uint64_t> prefetching_;
  std::mutex compiled_mutex_;
  std::unordered_set<uint64_t> compiled_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string kind = "knobs";
  std::string cache = CUTUNE_SOURCE_DIR "/../shared/datasets/gemm/RTX_3090.json.gz";
  std::string shape = "1024,1024,1024";
  int records = 1000;
  int repeats = 3;
  int rounds = 0;     // 0: the policy's default (for IR features ModelPolicyOptions::ir_rounds)
  int max_depth = 0;  // 0: likewise (ir_max_depth)
  int max_bin = cost_model::RankModelOptions{}.max_bin;
  double colsample = cost_model::RankModelOptions{}.colsample;
  double eta = cost_model::RankModelOptions{}.eta;
  int warm_trees = RefitOptions{}.warm_trees;
  int warm_rounds = 1;
  int ensemble = ModelPolicyOptions{}.ensemble;
  int split_refit = RefitOptions{}.split_from;
  int split_parts = RefitOptions{}.split_parts;
  double max_tree_growth = RefitOptions{}.max_tree_growth;
  AnnealingOptions annealing;
  annealing.early_stop = 0;
  int cascade = CascadeOptions::kAuto;
  int cascade_ensemble = CascadeOptions{}.ensemble;
  int cascade_rounds = CascadeOptions{}.rounds, cascade_warm = CascadeOptions{}.warm_trees;
  int cascade_chains = CascadeOptions{}.chains;
  int cascade_depth = CascadeOptions{}.max_depth;
  int compare = 0;
  int loop = 0;
  bool loop_full = true;  // --loop also runs the full search (IR features for every step)
  int seeds = 5;
  int pipeline = 0;
  double trial_ms = 28, compile_ms = 7;
  std::string objective = "knobs";
  CLI::App app{"The cost of one round of the model-based tuner", "tune_round"};
  app.add_option("--cache", cache,
                 "knobs: the Kernel Tuner cache replayed (default gemm/RTX_3090)");
  app.add_option("--features", kind,
                 "knobs (a replayed cache) or ir (the GEMM template, synthetic labels)")
      ->check(CLI::IsMember({"knobs", "ir"}));
  app.add_option("--shape", shape, "ir: the GEMM shape M,N,K");
  app.add_option("--records", records, "records the cold round fits on");
  app.add_option("--repeats", repeats, "fresh policies timed");
  app.add_option("--rounds", rounds,
                 "boosting rounds (trees) of each booster (0: the tuner's default)");
  app.add_option("--max-depth", max_depth, "tree depth (0: the tuner's default)");
  app.add_option("--max-bin", max_bin, "histogram bins of the boosters");
  app.add_option("--colsample", colsample, "column share each tree samples");
  app.add_option("--eta", eta, "the boosters' learning rate");
  app.add_option("--warm-trees", warm_trees,
                 "trees a warm round adds (0: every round fits from scratch)");
  app.add_option("--warm-rounds", warm_rounds, "rounds after the cold one, each 64 records later");
  app.add_option("--chains", annealing.chains, "annealing chains");
  app.add_option("--steps", annealing.max_steps, "annealing steps a chain");
  app.add_option("--early-stop", annealing.early_stop, "the annealing's early stop (0: off)");
  app.add_option("--temp", annealing.temp_start, "the annealing's starting temperature");
  app.add_option("--cascade", cascade,
                 "a knob-feature surrogate hands its K best to the main model (0: off)");
  app.add_option("--max-tree-growth", max_tree_growth,
                 "a refit past G times the cold trees fits from scratch (0: no cap)");
  app.add_option("--split-refit", split_refit,
                 "a cold fit on N records or more grows a share of its trees (0: off)");
  app.add_option("--split-parts", split_parts,
                 "... spread over this many rounds (the cold one and the refits after it)")
      ->check(CLI::Range(2, 64));
  app.add_option("--ensemble", ensemble, "the main model's boosters");
  app.add_option("--cascade-ensemble", cascade_ensemble, "the surrogate's boosters");
  app.add_option("--cascade-chains", cascade_chains,
                 "annealing chains with the cascade on (0: --chains)");
  app.add_option("--cascade-rounds", cascade_rounds,
                 "the surrogate's trees at a cold fit (0: the main model's)");
  app.add_option("--cascade-depth", cascade_depth, "the surrogate's tree depth");
  app.add_option("--cascade-warm", cascade_warm,
                 "trees a warm fit of the surrogate adds (0: the main model's)");
  app.add_option("--compare", compare,
                 "each repeat also runs a policy with a cascade of K and compares the batches");
  app.add_option("--loop", loop,
                 "instead: tuning runs of TRIALS trials, full search against the cascade");
  app.add_option("--loop-full", loop_full, "1: --loop also runs the full search; 0: not");
  app.add_option("--pipeline", pipeline,
                 "instead: GPU tuning runs of TRIALS trials on a simulated GPU");
  app.add_option("--trial-ms", trial_ms, "--pipeline: milliseconds in the worker a trial");
  app.add_option("--compile-ms", compile_ms,
                 "--pipeline: NVRTC milliseconds a configuration unless prefetched");
  app.add_option("--objective", objective,
                 "ir: the synthetic label (knob distances) or an emulated time from the IR")
      ->check(CLI::IsMember({"knobs", "ir"}));
  app.add_option("--seeds", seeds, "--loop, --pipeline: runs");
  if (int rc = cutune::bench::parse_command_line(app, argc, argv); rc >= 0) return rc;

  std::optional<replay::ReplayTask> task;
  std::unique_ptr<Template> tmpl;
  std::unique_ptr<TimedFeatures> features;
  std::unique_ptr<ReplayMeasurerAdapter> measurer;
  const ConfigSpace* space = nullptr;
  try {
    if (kind == "knobs") {
      task.emplace(replay::ReplayTask::from_cache(replay::load_kt_cache(cache)));
      space = &task->space();
      features = std::make_unique<TimedFeatures>(cost_model::make_knob_features(*space));
      measurer = std::make_unique<ReplayMeasurerAdapter>(*task);
    } else {
      tmpl = make_template("gemm", cutune::parse_shape(shape), "gemm_nn");
      space = &tmpl->space();
      features =
          std::make_unique<TimedFeatures>(cost_model::make_ir_features(*tmpl, ir::TargetLimits{}));
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "tune_round: {}\n", e.what());
    return 2;
  }
  std::unique_ptr<IrObjective> ir_objective;
  if (tmpl && objective == "ir") ir_objective = std::make_unique<IrObjective>(*tmpl);
  auto measure = [&](const std::vector<Config>& cs) {
    if (measurer) return measurer->measure(cs);
    std::vector<MeasureResult> out;
    for (const Config& c : cs)
      out.push_back(ir_objective ? (*ir_objective)(c) : synthetic_result(c));
    return out;
  };

  auto options = [&](int survivors) {
    ModelPolicyOptions o;
    o.plan_size = 64;
    o.annealing = annealing;
    o.refit.warm_trees = warm_trees;
    o.ensemble = ensemble;
    o.refit.split_from = split_refit;
    o.refit.split_parts = split_parts;
    o.refit.max_tree_growth = max_tree_growth;
    o.model.nthread = 1;
    if (rounds > 0) o.model.rounds = o.ir_rounds = rounds;
    if (max_depth > 0) o.model.max_depth = o.ir_max_depth = max_depth;
    o.model.max_bin = max_bin;
    o.model.colsample = colsample;
    o.model.eta = eta;
    o.cascade.survivors = survivors;
    o.cascade.ensemble = cascade_ensemble;
    o.cascade.rounds = cascade_rounds;
    o.cascade.chains = cascade_chains;
    o.cascade.warm_trees = cascade_warm;
    o.cascade.max_depth = cascade_depth;
    return o;
  };
  // True throughput (1/s; 0 for a failure) of each configuration.
  auto truth = [&](const std::vector<Config>& cs) {
    std::vector<double> out;
    for (const MeasureResult& r : measure(cs)) out.push_back(throughput_of(r));
    return out;
  };

  if (pipeline > 0) {
    fmt::print(
        "{} features, GPU runs of {} trials simulated ({} ms a trial in the worker, {} ms of "
        "compile wall time a configuration unless prefetched), batches of 64, {} seeds; wall "
        "seconds\n",
        kind, pipeline, trial_ms, compile_ms, seeds);
    struct Mode {
      const char* name;
      bool pipeline, background;
    };
    for (const Mode mode : {Mode{"no pipeline", false, false}, Mode{"pipeline", true, false},
                            Mode{"pipeline, background proposals", true, true}}) {
      for (int seed = 0; seed < seeds; ++seed) {
        ModelPolicy policy(*space, *features, options(cascade));
        SimulatedGpu gpu([&](const Config& c) { return measure({c})[0]; }, trial_ms * 1e-3,
                         compile_ms * 1e-3);
        TuneOptions o;
        o.trials = pipeline;
        o.batch = 64;
        o.seed = static_cast<uint64_t>(seed);
        o.progress = false;
        o.set_pipeline(mode.pipeline);
        o.background_propose = mode.background;
        TaskKey key{.op = "gemm", .shape = {}, .dtype = "float32", .target_arch = "sm_90",
                    .device_name = "simulated GPU", .template_name = "gemm_nn"};
        Tuner tuner(*space, gpu, policy, key, o);
        const double w0 = wall_now();
        const TuneSummary s = tuner.run();
        const double wall = wall_now() - w0;
        double best = 0;
        for (const Record& r : tuner.records()) {
          best = std::max(best, throughput_of(r.result));
        }
        fmt::print(
            "{}, seed {}: {:.1f} s, {:.1f} trials/s; proposing {:.1f} s{}, measuring {:.1f} s "
            "(of which the run itself {:.1f} s); best {:.1f}/s\n",
            mode.name, seed, wall, s.measured / wall, s.propose_s,
            mode.background ? " (beside the measurement)" : "", s.measure_s,
            s.measured * trial_ms * 1e-3, best);
      }
    }
    return 0;
  }

  if (loop > 0) {
    const int k = cascade > 0 ? cascade : CascadeOptions::kAutoSurvivors;
    fmt::print(
        "{} features, tuning runs of {} trials, {} seeds: full search against a cascade of {} "
        "({} surrogate boosters); best true throughput (1/s)\n",
        kind, loop, seeds, k, cascade_ensemble);
    for (int survivors : {0, k}) {
      if (survivors == 0 && !loop_full) continue;
      std::vector<std::vector<double>> best_at;  // per seed, after each 64 trials
      double cpu = 0;
      for (int seed = 0; seed < seeds; ++seed) {
        ModelPolicy policy(*space, *features, options(survivors));
        policy.reset(static_cast<uint64_t>(seed));
        int trials = 0;
        double best = 0;
        std::vector<double> marks;
        double t0 = cpu_now();
        while (trials < loop) {
          std::vector<Config> batch = policy.propose(std::min(64, loop - trials));
          if (batch.empty()) break;
          std::vector<MeasureResult> res = measure(batch);
          for (size_t i = 0; i < batch.size(); ++i) {
            best = std::max(best, throughput_of(res[i]));
            if ((++trials) % 64 == 0 || trials == loop) marks.push_back(best);
          }
          policy.observe(batch, res);
        }
        cpu += cpu_now() - t0;
        best_at.push_back(marks);
        // Progress: runs done, that run's best, CPU seconds a run and the time left.
        const double per_run = cpu / (seed + 1);
        fmt::print(stderr,
                   "\r{}: run {}/{} (its best {:.1f}/s), {:.1f} CPU-s a run, ETA {:.0f} s   ",
                   survivors ? "cascade" : "full", seed + 1, seeds, best, per_run,
                   per_run * (seeds - seed - 1));
      }
      fmt::print(stderr, "\n");
      fmt::print("{}: {:.1f} s CPU for {} runs\n",
                 survivors ? fmt::format("cascade {}", survivors) : std::string("full"), cpu,
                 seeds);
      for (size_t m = 0; m < best_at[0].size(); ++m) {
        std::vector<double> v;
        for (const auto& b : best_at) v.push_back(m < b.size() ? b[m] : 0.0);
        std::vector<double> sorted = v;
        std::sort(sorted.begin(), sorted.end());
        double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
        std::string each;
        for (double x : v) each += fmt::format(" {:.1f}", x);
        fmt::print("  after {:4d} trials: median {:.1f} mean {:.1f} (seeds:{})\n",
                   std::min<int>(64 * (m + 1), loop), sorted[sorted.size() / 2], mean, each);
      }
    }
    return 0;
  }

  std::mt19937_64 rng(1);
  std::vector<Config> configs;
  std::unordered_set<uint64_t> seen;
  while (static_cast<int>(configs.size()) < records) {
    std::optional<Config> c = space->sample_valid(rng);
    if (c && seen.insert(c->index()).second) configs.push_back(*c);
  }
  std::vector<MeasureResult> results = measure(configs);

  const ModelPolicy probe(*space, *features, options(cascade));
  const cost_model::RankModelOptions model_options = probe.surrogate().model_options();
  const AnnealingOptions resolved = probe.annealing_options();
  fmt::print(
      "{} features ({} columns), {} records, {} trees of depth {} a booster, "
      "warm trees {}, annealing {} chains x {} steps (early stop {}), cascade {}, one thread, "
      "CPU seconds (wall)\n",
      kind, features->size(), records, model_options.rounds,
      model_options.max_depth, warm_trees, resolved.chains, resolved.max_steps,
      resolved.early_stop,
      options(cascade).cascade.survivors_for(features->schema()));
  auto best_half = [](std::vector<float> s) {
    std::sort(s.begin(), s.end(), std::greater<>());
    s.resize(s.size() / 2);
    return s.empty() ? 0.0 : std::accumulate(s.begin(), s.end(), 0.0) / s.size();
  };
  if (compare > 0) {
    for (int r = 0; r < repeats; ++r) {
      ModelPolicy full(*space, *features, options(0));
      ModelPolicy cas(*space, *features, options(compare));
      full.reset(r);
      cas.reset(r);
      full.observe(configs, results);
      cas.observe(configs, results);
      for (int round = 0; round <= warm_rounds; ++round) {
        double times[2];
        long vectors[2];
        std::vector<Config> batch[2];
        ModelPolicy* p[2] = {&full, &cas};
        for (int i = 0; i < 2; ++i) {
          long c0 = features->calls_;
          double t0 = cpu_now();
          p[i]->refit_and_plan();
          batch[i] = p[i]->propose(64);
          times[i] = cpu_now() - t0;
          vectors[i] = features->calls_ - c0;
        }
        std::unordered_set<uint64_t> in_full;
        for (const Config& c : batch[0]) in_full.insert(c.index());
        int overlap = 0;
        for (const Config& c : batch[1]) overlap += in_full.contains(c.index());
        std::string line;
        for (int i = 0; i < 2; ++i) {
          std::vector<double> t = truth(batch[i]);
          double best = t.empty() ? 0 : *std::max_element(t.begin(), t.end());
          double mean = t.empty() ? 0 : std::accumulate(t.begin(), t.end(), 0.0) / t.size();
          // Both judged by the full search's model (the two fit the same one).
          line += fmt::format(
              "{} {:.3f} s, {} vectors, best half {:.3f}, true best {:.1f} mean "
              "{:.1f}; ",
              i ? "cascade" : "full", times[i], vectors[i], best_half(full.predict(batch[i])), best,
              mean);
        }
        fmt::print("repeat {} {}: {}overlap {}/{}\n", r,
                   round == 0 ? std::string("cold") : fmt::format("warm {}", round), line, overlap,
                   batch[0].size());
        std::vector<MeasureResult> res = measure(batch[0]);
        full.observe(batch[0], res);
        cas.observe(batch[0], res);
      }
    }
    return 0;
  }

  for (int r = 0; r < repeats; ++r) {
    ModelPolicy policy(*space, *features, options(cascade));
    policy.reset(r);
    policy.observe(configs, results);
    for (int round = 0; round <= warm_rounds; ++round) {
      const std::string phase = round == 0 ? "cold" : fmt::format("warm {}", round);
      const double f0 = features->seconds_;
      const long c0 = features->calls_, u0 = features->unbuildable_;
      const int warm0 = policy.surrogate().warm_fits();
      double w0 = wall_now(), t0 = cpu_now();
      policy.refit_and_plan();
      double t1 = cpu_now();
      std::vector<Config> batch = policy.propose(64);
      double t2 = cpu_now(), w2 = wall_now();
      // What the annealing found, judged by the model that chose it: the mean acquisition of
      // the batch's best half (the rest holds random and trust-region picks).
      double quality = best_half(policy.predict(batch));
      fmt::print(
          "repeat {} {} ({} fit): fit + anneal ({} steps, last change at {}) + local search "
          "{:.3f} s, batch of {} {:.3f} s, round {:.3f} s ({:.3f} s wall); of it {} feature "
          "vectors ({} unbuildable) {:.3f} s; batch's best half scores {:.3f}; phases: "
          "records' features {:.3f} s, fit {:.3f} s, surrogate fit {:.3f} s, plan {:.3f} s\n",
          r, phase, policy.surrogate().warm_fits() > warm0 ? "warm" : "full", policy.last_annealing_steps(),
          policy.last_annealing_change(), t1 - t0, batch.size(), t2 - t1, t2 - t0, w2 - w0,
          features->calls_ - c0, features->unbuildable_ - u0, features->seconds_ - f0, quality,
          policy.last_round_times().features, policy.last_round_times().fit,
          policy.last_round_times().cascade, policy.last_round_times().plan);
      policy.observe(batch, measure(batch));
    }
  }
  return 0;
}
