// Rounds at least as long to measure as to propose (TuneOptions::time_aware_rounds).

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "src/tune/model/model_policy.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/tuner.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

// Proposals that take 100 ms (with `every` 2, only every other one, as when a proposal only
// hands out the rest of a plan), and every set_min_round the tuner makes.
class SlowPolicy : public SearchPolicy {
 public:
  SlowPolicy(SearchPolicy& inner, int every) : inner_(inner), every_(every) {}
  void reset(uint64_t seed) override { inner_.reset(seed); }
  std::vector<Config> propose(int batch) override {
    if (proposals_++ % every_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return inner_.propose(batch);
  }
  void observe(const std::vector<Config>& configs,
               const std::vector<MeasureResult>& results) override {
    inner_.observe(configs, results);
  }
  std::string name() const override { return inner_.name(); }
  void set_min_round(int size) override {
    min_rounds.push_back(size);
    inner_.set_min_round(size);
  }
  std::vector<int> min_rounds;

 private:
  SearchPolicy& inner_;
  int every_ = 1;
  int proposals_ = 0;
};

// 1 ms a configuration, like a fast kernel on a GPU.
class QuickMeasurer : public Measurer {
 public:
  explicit QuickMeasurer(Measurer& inner) : inner_(inner) {}
  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(int(batch.size())));
    sizes.push_back(int(batch.size()));
    return inner_.measure(batch);
  }
  std::vector<int> sizes;  // of every batch measured
  std::string device_name() const override { return inner_.device_name(); }
  std::string target_arch() const override { return inner_.target_arch(); }

 private:
  Measurer& inner_;
};

ModelPolicyOptions small_model() {
  ModelPolicyOptions po;
  po.model.rounds = 20;
  po.annealing.chains = 16;
  po.annealing.max_steps = 50;
  return po;
}

}  // namespace

TEST_CASE("a minimum round raises the model's rounds while few records exist", "[time_aware]") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  ReplayMeasurerAdapter measurer(task);
  for (int min_round : {0, 24}) {
    ModelPolicy policy(task.space(), features, small_model());
    policy.reset(3);
    const std::vector<Config> first = policy.propose(64);  // the random first batch
    REQUIRE(first.size() == static_cast<size_t>(small_model().first_batch));
    policy.observe(first, measurer.measure(first));
    if (min_round > 0) policy.set_min_round(min_round);
    const std::vector<Config> second = policy.propose(64);
    INFO("min_round " << min_round);
    // 8 records: clamp(8 / 8, min_batch, 64) = 2 rounds, or the minimum asked for.
    if (min_round == 0) CHECK(second.size() < 24);
    if (min_round > 0) CHECK(second.size() == 24);
  }
}

TEST_CASE("the tuner asks for rounds as long to measure as to propose, only when told",
          "[time_aware]") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features{task.space()};
  for (auto [aware, every] : {std::pair{false, 1}, std::pair{true, 1}, std::pair{true, 2}}) {
    ModelPolicy model(task.space(), features, small_model());
    SlowPolicy policy(model, every);
    ReplayMeasurerAdapter replay(task);
    QuickMeasurer measurer(replay);
    TuneOptions o;
    o.trials = 64;
    o.batch = 16;
    o.seed = 5;
    o.progress = false;
    o.pipeline = true;
    o.time_aware_rounds = aware;
    Tuner tuner(task.space(), measurer, policy, test::synthetic_key(), o);
    const TuneSummary s = tuner.run();
    CHECK(s.measured == 64);
    INFO("aware " << aware << ", slow proposals: every " << every);
    INFO("batches " << ::Catch::Detail::stringify(measurer.sizes));
    if (!aware) {
      CHECK(policy.min_rounds.empty());
      // Rounds of clamp(n / 8, 2, 16) after the random first 16: some batches are small.
      CHECK(std::count_if(measurer.sizes.begin(), measurer.sizes.end(),
                          [](int n) { return n < 8; }) >= 2);
      continue;
    }
    REQUIRE_FALSE(policy.min_rounds.empty());
    // 100 ms a proposal over about 1 ms a trial: far more than a batch, so the batch size
    // (16), unless this machine is loaded enough to stretch a 1 ms sleep past 25 ms. A quick
    // proposal between two slow ones does not bring the minimum down (decaying maximum).
    for (int m : policy.min_rounds) {
      CHECK(m <= 16);
      CHECK(m >= 4);
    }
    // The first set_min_round comes after the first batch is measured; the batch proposed
    // before it (the pipeline's) may still be small, every later one is at least 4.
    REQUIRE(measurer.sizes.size() >= 3);
    for (size_t i = 2; i + 1 < measurer.sizes.size(); ++i) CHECK(measurer.sizes[i] >= 4);
    CHECK(measurer.sizes.size() < 10);
  }
}
