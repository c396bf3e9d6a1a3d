#include <catch2/catch.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/tune/model/model_policy.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/tuner.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

// The order of calls, and whether each propose ran on the tuning thread.
struct Events {
  std::mutex mutex;
  std::vector<std::string> calls;
  std::thread::id tuning_thread = std::this_thread::get_id();
  int off_thread_proposals = 0;
  int off_thread_prefetches = 0;
  void add(std::string what) {
    std::lock_guard<std::mutex> lock(mutex);
    calls.push_back(std::move(what));
  }
};

class WatchedPolicy : public SearchPolicy {
 public:
  WatchedPolicy(SearchPolicy& inner, Events& events) : inner_(inner), events_(events) {}
  void reset(uint64_t seed) override { inner_.reset(seed); }
  std::vector<Config> propose(int batch) override {
    if (std::this_thread::get_id() != events_.tuning_thread) ++events_.off_thread_proposals;
    std::vector<Config> out = inner_.propose(batch);
    events_.add("propose");
    return out;
  }
  void observe(const std::vector<Config>& configs,
               const std::vector<MeasureResult>& results) override {
    events_.add("observe");
    inner_.observe(configs, results);
  }
  std::string name() const override { return inner_.name(); }

 private:
  SearchPolicy& inner_;
  Events& events_;
};

class WatchedMeasurer : public Measurer {
 public:
  WatchedMeasurer(Measurer& inner, Events& events) : inner_(inner), events_(events) {}
  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    events_.add("measure");
    return inner_.measure(batch);
  }
  void prefetch(const std::vector<Config>&) override {
    if (std::this_thread::get_id() != events_.tuning_thread) ++events_.off_thread_prefetches;
    events_.add("prefetch");
  }
  std::string device_name() const override { return inner_.device_name(); }
  std::string target_arch() const override { return inner_.target_arch(); }

 private:
  Measurer& inner_;
  Events& events_;
};

std::vector<uint64_t> run(const replay::ReplayTask& task, bool background, Events& events) {
  test::ValueFeatures features{task.space()};
  ModelPolicyOptions po;
  po.model.rounds = 20;
  po.annealing.chains = 16;
  po.annealing.max_steps = 50;
  ModelPolicy model(task.space(), features, po);
  WatchedPolicy policy(model, events);
  ReplayMeasurerAdapter replay(task);
  WatchedMeasurer measurer(replay, events);
  TuneOptions o;
  o.trials = 96;
  o.batch = 16;
  o.seed = 5;
  o.progress = false;
  o.pipeline = true;
  o.background_propose = background;
  Tuner tuner(task.space(), measurer, policy, test::synthetic_key(), o);
  TuneSummary s = tuner.run();
  CHECK(s.measured == 96);
  CHECK(model.fits() >= 3);
  std::vector<uint64_t> out;
  for (const Record& r : tuner.records()) out.push_back(r.config_index);
  return out;
}

}  // namespace

TEST_CASE("proposing in the background gives the synchronous pipeline's records", "[background]") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  Events sync, background;
  std::vector<uint64_t> a = run(task, false, sync);
  std::vector<uint64_t> b = run(task, true, background);
  CHECK(a == b);
  CHECK(sync.off_thread_proposals == 0);
  // Every proposal after the first ran on its own thread.
  const auto proposals = std::count(background.calls.begin(), background.calls.end(), "propose");
  CHECK(proposals >= 5);
  CHECK(background.off_thread_proposals == proposals - 1);
  // Synchronous: propose b+1, prefetch it, measure b. Background: b+1 is prefetched by the
  // proposing thread as soon as it is chosen, while b may still be measured, and before b is
  // observed: the k-th prefetch comes after exactly k observations.
  auto first = [](const std::vector<std::string>& calls, const std::string& what) {
    return std::find(calls.begin(), calls.end(), what) - calls.begin();
  };
  CHECK(first(sync.calls, "prefetch") < first(sync.calls, "measure"));
  CHECK(sync.off_thread_prefetches == 0);
  const auto prefetches = std::count(background.calls.begin(), background.calls.end(), "prefetch");
  CHECK(prefetches == proposals - 1);
  CHECK(background.off_thread_prefetches == prefetches);
  int observed = 0, prefetched = 0;
  for (const std::string& call : background.calls) {
    if (call == "observe") ++observed;
    if (call == "prefetch") CHECK(observed == prefetched++);
  }
}
