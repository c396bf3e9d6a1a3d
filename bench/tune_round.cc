// The cost of one round of the model-based tuner: fit the ranking model on 1,000 records,
// anneal 128 chains x 500 steps (no early stop), take a batch of 64. One thread.
//
//   tune_round [--cache FILE] [--records 1000] [--repeats 3]

#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include <fmt/format.h>

#include "cost_model/features.h"
#include "src/replay/kt_cache.h"
#include "cost_model/features.h"
#include "src/tune/model_policy.h"
#include "src/tune/replay_measurer_adapter.h"

using namespace cutune;

int main(int argc, char** argv) {
  std::string cache = CUTUNE_SOURCE_DIR "/../shared/datasets/gemm/RTX_3090.json.gz";
  int records = 1000;
  int repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--cache") cache = argv[i + 1];
    else if (a == "--records") records = std::stoi(argv[i + 1]);
    else if (a == "--repeats") repeats = std::stoi(argv[i + 1]);
  }
  replay::ReplayTask task = replay::ReplayTask::from_cache(replay::load_kt_cache(cache));
  auto features = cost_model::make_knob_features(task.space());
  ReplayMeasurerAdapter measurer(task);

  std::mt19937_64 rng(1);
  std::vector<Config> configs;
  std::unordered_set<uint64_t> seen;
  while (static_cast<int>(configs.size()) < records) {
    std::optional<Config> c = task.space().sample_valid(rng);
    if (c && seen.insert(c->index()).second) configs.push_back(*c);
  }
  std::vector<MeasureResult> results = measurer.measure(configs);

  for (int r = 0; r < repeats; ++r) {
    ModelPolicyOptions o;
    o.plan_size = 64;
    o.annealing.chains = 128;
    o.annealing.max_steps = 500;
    o.annealing.early_stop = 0;
    o.model.nthread = 1;
    ModelPolicy policy(task.space(), *features, o);
    policy.reset(r);
    policy.observe(configs, results);
    auto t0 = std::chrono::steady_clock::now();
    policy.refit_and_plan();
    auto t1 = std::chrono::steady_clock::now();
    std::vector<Config> batch = policy.propose(64);
    auto t2 = std::chrono::steady_clock::now();
    fmt::print("round {}: {} records, {} features, fit + anneal ({} chains x {} steps) {:.3f} s, "
               "batch of {} {:.3f} s\n",
               r, records, features->size(), o.annealing.chains, policy.last_annealing_steps(),
               std::chrono::duration<double>(t1 - t0).count(), batch.size(),
               std::chrono::duration<double>(t2 - t1).count());
  }
  return 0;
}
