#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <functional>
#include <fstream>
#include <limits>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "src/records/tuning_log.h"
#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/tuner.h"
#include "src/tune/tuning_session.h"
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
  TuneSummary first = Tuner(task.space(), measurer, *policy, test::synthetic_key(), o).run();
  CHECK(first.measured == 50);
  CHECK(first.resumed == 0);
  REQUIRE(first.best.has_value());
  CHECK(read_log(log).records.size() == 50);

  o.trials = 120;
  o.resume = true;
  TuneSummary second = Tuner(task.space(), measurer, *policy, test::synthetic_key(), o).run();
  CHECK(second.resumed == 50);
  CHECK(second.measured == 70);
  std::vector<Record> records = read_log(log).records;
  REQUIRE(records.size() == 120);
  // The best of the resumed run is the best of all 120 records, found independently here.
  double best_in_log = std::numeric_limits<double>::infinity();
  uint64_t best_index = 0;
  for (const Record& r : records) {
    if (r.result.ok() && r.result.mean_s() < best_in_log) {
      best_in_log = r.result.mean_s();
      best_index = r.config_index;
    }
  }
  REQUIRE(second.best.has_value());
  CHECK(second.best_s == best_in_log);
  CHECK(second.best->index() == best_index);
  std::set<uint64_t> distinct;
  for (const Record& r : records) distinct.insert(r.config_index);
  CHECK(distinct.size() == 120);
  CHECK(records[0].task == test::synthetic_key());
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
    Tuner(task.space(), slow, *policy, test::synthetic_key(), options()).run();
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
  TuneSummary s = Tuner(task.space(), measurer, *policy, test::synthetic_key(), options()).run();
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
    r.task = test::synthetic_key();
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
  CHECK_THROWS_AS(Tuner(task.space(), measurer, *policy, test::synthetic_key(), o).run(), RecordError);
}

namespace {

// Sets `stop` once it has measured `after` configurations, as Ctrl-C would mid-run.
class StoppingMeasurer : public Measurer {
 public:
  StoppingMeasurer(Measurer& inner, std::atomic<bool>& stop, size_t after)
      : inner_(inner), stop_(stop), after_(after) {}
  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    measured_ += batch.size();
    if (measured_ >= after_) stop_ = true;
    return inner_.measure(batch);
  }
  std::string device_name() const override { return inner_.device_name(); }
  std::string target_arch() const override { return inner_.target_arch(); }

 private:
  Measurer& inner_;
  std::atomic<bool>& stop_;
  size_t after_;
  size_t measured_ = 0;
};

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

}  // namespace

TEST_CASE("the tuning session returns the records it logged") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features(task.space());
  ReplayMeasurerAdapter measurer(task);
  SearchOptions search{.tuner = TunerKind::random, .trials = 30, .batch = 8, .seed = 3};
  TuningSession session({test::synthetic_key(), task.space(), features, std::nullopt}, search);
  auto log = fresh_log("session");
  TuningOutcome out = session.run(measurer, {log, LogMode::fresh}, {.progress = false});
  CHECK(out.summary.measured == 30);
  CHECK_FALSE(out.summary.interrupted);
  std::vector<Record> logged = read_log(log).records;
  REQUIRE(logged.size() == 30);
  REQUIRE(out.records.size() == 30);
  for (size_t i = 0; i < logged.size(); ++i) CHECK(out.records[i] == logged[i]);
}

TEST_CASE("a stop request ends the run after the batch in flight, which is logged") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features(task.space());
  ReplayMeasurerAdapter inner(task);
  std::atomic<bool> stop{false};
  StoppingMeasurer measurer(inner, stop, 12);  // set during the second batch of 8
  SearchOptions search{.tuner = TunerKind::random, .trials = 100, .batch = 8};
  TuningSession session({test::synthetic_key(), task.space(), features, std::nullopt}, search);
  auto log = fresh_log("stop");
  TuningOutcome out =
      session.run(measurer, {log, LogMode::fresh}, {.progress = false, .stop = &stop});
  CHECK(out.summary.interrupted);
  CHECK(out.summary.measured == 16);
  CHECK(read_log(log).records.size() == 16);

  // Resuming measures the rest, and only the rest.
  stop = false;
  ReplayMeasurerAdapter plain(task);
  TuningOutcome rest = session.run(plain, {log, LogMode::resume}, {.progress = false});
  CHECK(rest.summary.resumed == 16);
  CHECK(rest.summary.measured == 84);
  CHECK_FALSE(rest.summary.interrupted);
}

TEST_CASE("the session refuses logs it must not write") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features(task.space());
  ReplayMeasurerAdapter measurer(task);
  SearchOptions search{.tuner = TunerKind::random, .trials = 10, .batch = 5};
  TuningSession session({test::synthetic_key(), task.space(), features, std::nullopt}, search);
  auto log = fresh_log("refuse");
  session.run(measurer, {log, LogMode::fresh}, {.progress = false});

  SECTION("an existing log without resume") {
    CHECK_THAT(user_error_of([&] {
                 session.run(measurer, {log, LogMode::fresh});
               }),
               Catch::Contains("exists (10 records); add --resume"));
    CHECK(read_log(log).records.size() == 10);
  }
  SECTION("resuming a log of another device names what differs") {
    TaskKey other = test::synthetic_key();
    other.device_name = "Other GPU";
    TuningSession elsewhere({other, task.space(), features, std::nullopt}, search);
    CHECK(user_error_of([&] {
            elsewhere.run(measurer, {log, LogMode::resume});
          }) ==
          fmt::format("--resume: {} holds no records of this task; its closest task differs in "
                      "device 'Synthetic GPU' (this run: 'Other GPU')",
                      log.string()));
  }
  SECTION("a file that is not a cutune log, even with resume") {
    auto text = fresh_log("not-a-log");
    std::ofstream(text) << "hello\n";
    CHECK_THAT(user_error_of([&] {
                 session.run(measurer, {text, LogMode::resume});
               }),
               Catch::Contains("is not a cutune tuning log"));
  }
  SECTION("a log another run is writing") {
    LogWriter other_run(log, {.exclusive = true});
    CHECK_THAT(user_error_of([&] {
                 session.run(measurer, {log, LogMode::resume});
               }),
               Catch::Contains("is being written by another cutune run"));
  }
  SECTION("a directory") {
    CHECK_THAT(user_error_of([&] {
                 session.run(measurer, {log.parent_path(), LogMode::fresh});
               }),
               Catch::Contains("is a directory"));
  }
}

TEST_CASE("search options out of range, and transfer without xgb, are user errors") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features(task.space());
  const auto make = [&](SearchOptions o, TransferSources t = {}) {
    return user_error_of([&] {
      TuningSession({test::synthetic_key(), task.space(), features, std::nullopt}, o, t);
    });
  };
  CHECK(make({.trials = 0}) == "--trials must be >= 1 (got 0)");
  CHECK(make({.batch = -3}) == "--batch must be >= 1 (got -3)");
  SearchOptions nan_kappa;
  nan_kappa.model.kappa = std::numeric_limits<double>::quiet_NaN();
  CHECK(make(nan_kappa) == "model option kappa must be >= 0 (got nan)");
  SearchOptions bad_epsilon;
  bad_epsilon.model.epsilon = -0.1;
  CHECK(make(bad_epsilon) == "model option epsilon must be in [0, 1] (got -0.1)");
  CHECK(make({.tuner = TunerKind::random}, {.paths = {"x.jsonl"}}) ==
        "--transfer-from needs --tuner xgb (got random)");
  CHECK(make({}, {.paths = {"/nonexistent/x.jsonl"},
                  .featurize = knob_featurizer(task.space(), features)}) ==
        "no such file: /nonexistent/x.jsonl");
}

TEST_CASE("seed configurations are measured first, once, and a resumed log's are not again",
          "[seeds]") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  const ConfigSpace& space = task.space();
  std::mt19937_64 rng(21);
  const Config a = *space.sample_valid(rng), b = *space.sample_valid(rng);
  REQUIRE(a.index() != b.index());
  auto log = fresh_log("seeds");
  test::ValueFeatures features{space};
  // A model tuner run on the log with these seeds; its summary and this run's records.
  const auto run = [&](int trials, bool resume, bool pipeline, std::vector<Config> seeds) {
    ReplayMeasurerAdapter measurer(task);
    ModelPolicy policy(space, features, test::small_model());
    TuneOptions o;
    o.trials = trials;
    o.batch = 16;
    o.log = log;
    o.resume = resume;
    o.progress = false;
    o.pipeline = pipeline;
    o.seed_configs = std::move(seeds);
    Tuner tuner(space, measurer, policy, test::synthetic_key(), o);
    const TuneSummary s = tuner.run();
    return std::pair{s, tuner.records()};
  };
  for (bool pipeline : {false, true}) {
    std::filesystem::remove(log);
    const auto [s, records] = run(40, false, pipeline, {a, b, a});  // a repeat is measured once
    INFO("pipeline " << pipeline);
    CHECK(s.measured == 40);
    REQUIRE(records.size() >= 2);
    CHECK(records[0].config_index == a.index());
    CHECK(records[0].trial == 0);
    CHECK(records[1].config_index == b.index());
    CHECK(records[1].trial == 1);
    std::set<uint64_t> distinct;
    for (const Record& r : records) distinct.insert(r.config_index);
    CHECK(distinct.size() == records.size());  // never proposed again by the policy
  }
  // Resumed: the seeds in the log are not measured again; a new one is, first.
  std::mt19937_64 more(22);
  Config c = *space.sample_valid(more);
  while (c.index() == a.index() || c.index() == b.index()) c = *space.sample_valid(more);
  const auto [s, records] = run(48, true, false, {a, c, b});
  CHECK(s.resumed == 40);
  CHECK(s.measured == 8);
  REQUIRE_FALSE(records.empty());
  CHECK(records[0].config_index == c.index());
  std::set<uint64_t> distinct;
  for (const Record& r : read_log(log).records) distinct.insert(r.config_index);
  CHECK(distinct.size() == 48);
  std::filesystem::remove(log);
}
