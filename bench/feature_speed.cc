// Feature vectors per second on one core, for the IR and knob extractors of GEMM tasks, over
// random valid configurations (distinct ones, no cache): the rate an annealing round sees
// before any memoisation. Also the time to build the IR alone, which the IR features pay.
// Rates are per second of this thread's CPU time, so that other processes sharing the core
// do not count against it; the wall-clock rate of the IR extractor is printed beside it.
//
//   feature_speed [configs=2000] [seconds_per_case=1.0] [only=ir|knobs|build|predict]
//
// predict: instead, the cost of scoring IR vectors (GEMM 1024^3) with one booster of 150
// trees fitted on the first 1,000 configurations (synthetic labels: a smooth function of the
// knobs), in calls of 128 rows as the annealing makes them: nanoseconds per row and tree.

#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_cli.h"
#include "cost_model/features.h"
#include "cost_model/rank_model.h"
#include "kernels/template.h"

namespace {

double now(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct Rate {
  double per_cpu_second = 0;
  double per_wall_second = 0;
};

// Runs `f` over the configurations round after round until `seconds` of CPU time have passed.
template <typename F>
Rate rate(const std::vector<cutune::Config>& configs, double seconds, F&& f) {
  size_t calls = 0;
  double cpu0 = now(CLOCK_THREAD_CPUTIME_ID), wall0 = now(CLOCK_MONOTONIC), cpu = 0;
  while (cpu < seconds) {
    for (const cutune::Config& c : configs) f(c);
    calls += configs.size();
    cpu = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  }
  if (cpu <= 0) return {};
  return {double(calls) / cpu, double(calls) / (now(CLOCK_MONOTONIC) - wall0)};
}

}  // namespace

int main(int argc, char** argv) {
  int n_configs = 2000;
  double seconds = 1.0;
  std::string only;
  CLI::App app{"Feature vectors per second on one core", "feature_speed"};
  app.add_option("CONFIGS", n_configs, "random valid configurations")
      ->check(cutune::bench::positive());
  app.add_option("SECONDS", seconds, "CPU seconds per case")->check(cutune::bench::positive());
  app.add_option("ONLY", only, "one case")
      ->check(CLI::IsMember({"ir", "knobs", "build", "predict"}));
  if (int rc = cutune::bench::parse_command_line(app, argc, argv); rc >= 0) return rc;
  if (only == "predict") {
    auto tmpl = cutune::make_template("gemm", {1024, 1024, 1024}, "gemm_nn");
    auto ir = cutune::cost_model::make_ir_features(*tmpl, cutune::ir::TargetLimits{});
    std::mt19937_64 rng(1);
    const int fit_rows = 1000, rows = std::max(n_configs, 128);
    auto x = cutune::cost_model::FeatureMatrix::zeros(fit_rows + rows, ir->size());
    std::vector<float> labels(fit_rows);
    for (int r = 0; r < fit_rows + rows; ++r) {
      cutune::Config c = *tmpl->space().sample_valid(rng);
      ir->extract(c, {x.data.data() + size_t(r) * x.cols, size_t(x.cols)});
      if (r >= fit_rows) continue;
      double t = 1;
      for (size_t k = 0; k < c.entities().size(); ++k) {
        double v = std::log2(1.0 + double(c.get(int(k)))) - 1.0 - double(k % 4);
        t += 0.1 * v * v;
      }
      labels[r] = float(1 / t);
    }
    std::vector<int> first(fit_rows);
    for (int r = 0; r < fit_rows; ++r) first[r] = r;
    cutune::cost_model::RankModel model("bench", {});
    model.fit(cutune::cost_model::select_rows(x, first), labels);
    std::vector<cutune::cost_model::FeatureMatrix> calls;
    for (int r = 0; r + 128 <= rows; r += 128) {
      std::vector<int> idx(128);
      for (int k = 0; k < 128; ++k) idx[k] = fit_rows + r + k;
      calls.push_back(cutune::cost_model::select_rows(x, idx));
    }
    double checksum = 0, cpu0 = now(CLOCK_THREAD_CPUTIME_ID), cpu = 0;
    size_t scored = 0;
    while (cpu < seconds) {
      for (const auto& m : calls) checksum += model.predict(m)[0];
      scored += calls.size() * 128;
      cpu = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    }
    fmt::print(
        "{} trees over {} columns ({} kept at the fit): {:.2f} ns per row and tree, "
        "{:.0f} rows/s\n",
        model.trees(), x.cols, model.columns().size(), 1e9 * cpu / (double(scored) * model.trees()),
        double(scored) / cpu);
    std::fprintf(stderr, "checksum %g\n", checksum);
    return 0;
  }
  auto seconds_for = [&](const char* what) { return only.empty() || only == what ? seconds : 0.0; };
  struct Case {
    std::string layout;
    std::vector<int64_t> shape;
  };
  std::vector<Case> cases = {{"gemm_nn", {1024, 1024, 1024}},
                             {"gemm_nn", {127, 255, 63}},
                             {"gemm_nt", {1024, 1024, 1024}},
                             {"gemm_nt", {127, 255, 63}}};
  fmt::print("{:<8} {:<14} {:>6} {:>14} {:>14} {:>14} {:>14}\n", "template", "shape", "length",
             "ir vectors/s", "(wall clock)", "knob vectors/s", "builds/s");
  double checksum = 0;
  for (const Case& c : cases) {
    auto tmpl = cutune::make_template("gemm", c.shape, c.layout);
    std::mt19937_64 rng(1);
    std::vector<cutune::Config> configs;
    for (int i = 0; i < n_configs; ++i) configs.push_back(*tmpl->space().sample_valid(rng));
    auto ir = cutune::cost_model::make_ir_features(*tmpl, cutune::ir::TargetLimits{});
    auto knobs = cutune::cost_model::make_knob_features(tmpl->space());
    std::vector<float> out(std::max(ir->size(), knobs->size()));
    Rate ir_rate = rate(configs, seconds_for("ir"), [&](const cutune::Config& cfg) {
      ir->extract(cfg, out);
      checksum += out[0];
    });
    Rate knob_rate = rate(configs, seconds_for("knobs"), [&](const cutune::Config& cfg) {
      knobs->extract(cfg, out);
      checksum += out[0];
    });
    Rate build_rate = rate(configs, seconds_for("build"), [&](const cutune::Config& cfg) {
      checksum += double(tmpl->build(cfg).buffers.size());
    });
    fmt::print("{:<8} {:<14} {:>6} {:>14.0f} {:>14.0f} {:>14.0f} {:>14.0f}\n", c.layout,
               fmt::format("{}x{}x{}", c.shape[0], c.shape[1], c.shape[2]), ir->size(),
               ir_rate.per_cpu_second, ir_rate.per_wall_second, knob_rate.per_cpu_second,
               build_rate.per_cpu_second);
  }
  std::fprintf(stderr, "checksum %g\n", checksum);
  return 0;
}
