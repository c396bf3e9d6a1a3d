#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include "src/records/tuning_log.h"
#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/tuner.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

std::filesystem::path fresh_log(const std::string& name) {
  auto dir = std::filesystem::path(CUTUNE_BINARY_DIR) / "tests" / "tune_tmp";
  std::filesystem::create_directories(dir);
  auto path = dir / (name + "." + std::to_string(getpid()) + ".jsonl");
  std::filesystem::remove(path);
  return path;
}

TaskKey synthetic_key() {
  TaskKey k;
  k.op = "synthetic";
  k.shape = {512};
  k.target_arch = "replay";
  k.device_name = "Synthetic GPU";
  k.template_name = "synthetic";
  return k;
}

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("a tuning run logs every measurement and resumes without re-measuring") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  ReplayMeasurerAdapter measurer(task);
  auto policy = make_random_policy(task.space());
  auto log = fresh_log("resume");

  TuneOptions o;
  o.trials = 50;
  o.batch = 16;
  o.log = log;
  o.progress = false;
  TuneSummary first = Tuner(task.space(), measurer, *policy, synthetic_key(), o).run();
  CHECK(first.measured == 50);
  CHECK(first.resumed == 0);
  REQUIRE(first.best.has_value());
  CHECK(read_log(log).records.size() == 50);

  o.trials = 120;
  o.resume = true;
  TuneSummary second = Tuner(task.space(), measurer, *policy, synthetic_key(), o).run();
  CHECK(second.resumed == 50);
  CHECK(second.measured == 70);
  CHECK(second.best_s <= first.best_s);
  std::vector<Record> records = read_log(log).records;
  REQUIRE(records.size() == 120);
  std::set<uint64_t> distinct;
  for (const Record& r : records) distinct.insert(r.config_index);
  CHECK(distinct.size() == 120);
  CHECK(records[0].task == synthetic_key());
  CHECK(records[0].knobs.contains("x"));
}

TEST_CASE("a tuning run killed mid-way loses no record and resumes to the target") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features(task.space());
  auto log = fresh_log("kill");
  constexpr int kTrials = 300;
  auto options = [&] {
    TuneOptions o;
    o.trials = kTrials;
    o.batch = 4;
    o.log = log;
    o.resume = true;
    o.progress = false;
    o.seed = 5;
    return o;
  };

  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ReplayMeasurerAdapter inner(task);
    test::SlowMeasurer slow(inner, std::chrono::milliseconds(10));
    ModelPolicyOptions mo;
    mo.plan_size = 16;
    mo.model.rounds = 20;
    auto policy = make_search_policy(TunerKind::xgb, task.space(), &features, mo);
    Tuner(task.space(), slow, *policy, synthetic_key(), options()).run();
    _exit(0);
  }
  // Wait until the child has logged some records, then kill it without warning.
  for (int i = 0; i < 500 && lines_of(log).size() < 40; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));

  std::vector<Record> before = read_log(log).records;
  INFO("records before the resume: " << before.size());
  REQUIRE(before.size() >= 40);
  REQUIRE(before.size() < kTrials);

  ReplayMeasurerAdapter measurer(task);
  auto policy = make_search_policy(TunerKind::random, task.space(), nullptr);
  TuneSummary s = Tuner(task.space(), measurer, *policy, synthetic_key(), options()).run();
  CHECK(s.resumed == static_cast<int>(before.size()));
  CHECK(s.total() == kTrials);

  std::vector<Record> after = read_log(log).records;
  REQUIRE(after.size() == kTrials);
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == before[i]);
  std::set<uint64_t> distinct;
  for (const Record& r : after) distinct.insert(r.config_index);
  CHECK(distinct.size() == after.size());
}

TEST_CASE("resuming refuses a log whose records lie outside the space") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  auto log = fresh_log("outside");
  {
    LogWriter w(log);
    Record r;
    r.task = synthetic_key();
    r.config_index = task.space().size() + 5;
    r.result.status = MeasureStatus::invalid;
    r.result.error = "x";
    w.append(r);
  }
  ReplayMeasurerAdapter measurer(task);
  auto policy = make_random_policy(task.space());
  TuneOptions o;
  o.trials = 10;
  o.log = log;
  o.resume = true;
  o.progress = false;
  CHECK_THROWS_AS(Tuner(task.space(), measurer, *policy, synthetic_key(), o).run(), RecordError);
}
