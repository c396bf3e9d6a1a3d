// The suite engine without MPI: which earlier tasks a task learns from, and that with transfer
// on a task's records do not depend on how many tasks are searched at once (the timing).

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "src/distributed/suite_runner.h"
#include "src/records/tuning_log.h"
#include "src/replay/kt_cache.h"
#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/tuning_session.h"

using namespace cutune;
using namespace cutune::distributed;
namespace fs = std::filesystem;

namespace {

// A cache of kernel `kernel` on `device`: knobs bx (8 values) and, unless `one_knob`, by (4),
// times a smooth function of both, scaled per device.
replay::ReplayTask cache(const std::string& kernel, const std::string& device, double scale,
                         bool one_knob = false) {
  // Ordered: the parser wants the parameters before the cache, as Kernel Tuner writes them.
  nlohmann::ordered_json c = {
      {"device_name", device}, {"kernel_name", kernel}, {"problem_size", {64}}};
  c["tune_params_keys"] =
      one_knob ? nlohmann::ordered_json{"bx"} : nlohmann::ordered_json{"bx", "by"};
  c["tune_params"]["bx"] = {1, 2, 3, 4, 5, 6, 7, 8};
  if (!one_knob) c["tune_params"]["by"] = {1, 2, 3, 4};
  for (int bx = 1; bx <= 8; ++bx)
    for (int by = 1; by <= (one_knob ? 1 : 4); ++by) {
      const double t = scale * (1 + (bx - 5) * (bx - 5) + 0.5 * (by - 3) * (by - 3));
      nlohmann::ordered_json e = {{"bx", bx}, {"time", t}};
      std::string key = std::to_string(bx);
      if (!one_knob) {
        e["by"] = by;
        key += "," + std::to_string(by);
      }
      c["cache"][key] = e;
    }
  return replay::ReplayTask::from_cache(replay::parse_kt_cache(c.dump()));
}

struct Suite {
  std::vector<replay::ReplayTask> replays;
  std::vector<std::unique_ptr<cost_model::FeatureExtractor>> features;
  std::vector<SuiteTask> tasks;

  Suite() {
    replays.push_back(cache("k", "GPU A", 1.0));
    replays.push_back(cache("other", "GPU A", 1.0));
    replays.push_back(cache("k", "GPU B", 2.0));
    replays.push_back(cache("k", "GPU C", 1.0, /*one_knob=*/true));
    replays.push_back(cache("k", "GPU D", 3.0));
    for (const replay::ReplayTask& r : replays) {
      features.push_back(cost_model::make_knob_features(r.space()));
      tasks.push_back({.key = replay_task_key(r),
                       .space = &r.space(),
                       .features = features.back().get(),
                       .featurize = knob_featurizer(r.space(), *features.back()),
                       .flops = std::nullopt});
    }
  }

  // Each task's records in trial order, timestamps aside.
  std::map<TaskKey, std::vector<Record>> run(int concurrent, bool transfer, const fs::path& log,
                                             std::vector<SuiteOutcome>* out,
                                             std::vector<Record> extra = {}) {
    fs::remove(log);
    SuiteOptions o;
    o.tune.trials = 16;
    o.tune.batch = 4;
    o.tune.seed = 3;
    o.tune.log = log;
    o.tune.progress = false;
    o.transfer = transfer;
    o.concurrent_tasks = concurrent;
    o.transfer_records = std::move(extra);
    o.make_policy = [](const ConfigSpace& space, const cost_model::FeatureExtractor* f,
                       std::shared_ptr<const TransferModel> t) {
      ModelPolicyOptions m;
      m.plan_size = 4;
      m.transfer = std::move(t);
      return make_search_policy(TunerKind::xgb, space, f, m);
    };
    MeasurerFactory factory = [this](int t) {
      return std::make_unique<ReplayMeasurerAdapter>(replays[size_t(t)]);
    };
    *out = run_suite(tasks, factory, o);
    std::vector<Record> records = read_log(log).records;
    for (Record& r : records) r.timestamp.clear();
    auto by_task = group_by_task(records);
    for (auto& [k, rs] : by_task)
      std::stable_sort(rs.begin(), rs.end(),
                       [](const Record& a, const Record& b) { return a.trial < b.trial; });
    return by_task;
  }
};

fs::path scratch(const std::string& name) {
  static const fs::path dir = [] {
    std::string templ = (fs::temp_directory_path() / "cutune-suite-test-XXXXXX").string();
    return fs::path(mkdtemp(templ.data()));
  }();
  return dir / name;
}

}  // namespace

TEST_CASE("suite transfer: a task learns from the earlier tasks of its template and knobs") {
  Suite s;
  CHECK(transfer_sources(s.tasks, 0).empty());
  CHECK(transfer_sources(s.tasks, 1).empty());                    // another kernel
  CHECK(transfer_sources(s.tasks, 2) == std::vector<size_t>{0});  // k on another GPU
  CHECK(transfer_sources(s.tasks, 3).empty());                    // k, other knobs
  CHECK(transfer_sources(s.tasks, 4) == std::vector<size_t>{0, 2});
}

TEST_CASE("suite transfer: the records do not depend on how many tasks run at once") {
  Suite s;
  std::vector<SuiteOutcome> serial, parallel, none;
  const auto a = s.run(1, true, scratch("serial.jsonl"), &serial);
  const auto b = s.run(0, true, scratch("parallel.jsonl"), &parallel);
  REQUIRE(a.size() == 5);
  for (const auto& [task, records] : a) {
    INFO(task.to_string());
    CHECK(records.size() == (task.device_name == "GPU C" ? 8 : 16));  // GPU C's space: 8
    CHECK(b.at(task) == records);
  }
  std::vector<int> learnt;
  for (const SuiteOutcome& o : parallel) learnt.push_back(o.transfer_tasks);
  CHECK(learnt == std::vector<int>{0, 0, 1, 0, 2});
  CHECK(parallel[4].transfer_rows == 32);

  // Without transfer no task learns, and the first task's records are the same.
  const auto c = s.run(0, false, scratch("none.jsonl"), &none);
  for (const SuiteOutcome& o : none) CHECK(o.transfer_tasks == 0);
  CHECK(c.at(s.tasks[0].key) == a.at(s.tasks[0].key));
}

TEST_CASE("suite transfer: records of other runs (--transfer-from) reach every task they fit") {
  Suite s;
  const replay::ReplayTask other = cache("k", "GPU Z", 1.5);
  std::vector<SuiteOutcome> out;
  s.run(0, /*transfer=*/false, scratch("from.jsonl"), &out, cache_records(other));
  std::vector<int> learnt;
  for (const SuiteOutcome& o : out) learnt.push_back(o.transfer_tasks);
  // Every cache with knobs bx and by learns from GPU Z (a replayed space places records by knob
  // names, whatever the kernel), k's one-knob cache not.
  CHECK(learnt == std::vector<int>{1, 1, 1, 0, 1});
  CHECK(out[0].transfer_rows == 32);
}
