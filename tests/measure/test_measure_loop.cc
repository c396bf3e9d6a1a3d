// The measuring loop without a GPU: records streamed to the log as results arrive, trial
// numbers, the end-of-run re-measurement of the top k (interleaved, chosen on, logged as its
// own kind, skipped by resume), bench's interleaving through a fake worker, and the emulator
// measurer on a tiny GEMM.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "kernels/template.h"
#include "src/measure/correctness.h"
#include "src/measure/emulator_measurer.h"
#include "src/measure/gpu_measurer.h"
#include "src/measure/gpu_timer.h"
#include "src/measure/worker_process.h"
#include "src/records/tuning_log.h"
#include "src/target/device_info.h"
#include "src/tune/search_policy.h"
#include "src/tune/tuner.h"

using namespace cutune;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  static const fs::path dir = [] {
    std::string templ = (fs::temp_directory_path() / "cutune-loop-test-XXXXXX").string();
    return fs::path(mkdtemp(templ.data()));
  }();
  fs::remove(dir / name);
  return dir / name;
}

TaskKey test_key() {
  return TaskKey{.op = "gemm",
                 .shape = {64, 64, 64},
                 .dtype = "float32",
                 .target_arch = "sm_90",
                 .device_name = "fake",
                 .template_name = "gemm_nn"};
}

// Answers configuration i with (1 + i % 97) µs, streaming each batch's results in reverse
// order; records every call. `remeasure_bias` is added to configurations measured after the
// tuning batches, so a re-measurement can change the winner.
class FakeMeasurer final : public Measurer {
 public:
  explicit FakeMeasurer(fs::path log) : log_(std::move(log)) {}

  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    calls.push_back({});
    std::vector<MeasureResult> out;
    for (const Config& c : batch) {
      calls.back().push_back(c.index());
      MeasureResult r;
      r.status = MeasureStatus::ok;
      r.timer = TimerKind::cuda_event;
      double t = 1e-6 * double(1 + c.index() % 97);
      if (remeasuring && c.index() == slowed) t *= 10;
      r.times_s = {t};
      out.push_back(r);
    }
    return out;
  }

  std::vector<MeasureResult> measure_streaming(const std::vector<Config>& batch,
                                               const ResultSink& sink) override {
    std::vector<MeasureResult> out = measure(batch);
    for (size_t k = out.size(); k-- > 0;) {
      sink(k, out[k]);
      // Streamed: the log holds this result already, before the batch ends.
      lines_seen.push_back(int(read_log(log_).records.size()));
    }
    return out;
  }

  std::vector<MeasureResult> remeasure(const std::vector<Config>& configs, int rounds) override {
    remeasuring = true;
    return Measurer::remeasure(configs, rounds);
  }

  std::string device_name() const override { return "fake"; }
  std::string target_arch() const override { return "sm_90"; }

  std::vector<std::vector<uint64_t>> calls;
  std::vector<int> lines_seen;
  bool remeasuring = false;
  uint64_t slowed = UINT64_MAX;

 private:
  fs::path log_;
};

}  // namespace

TEST_CASE("the tuner logs each result as it arrives, with its trial number", "[measure]") {
  auto tmpl = make_template("gemm", {64, 64, 64});
  const fs::path log = scratch("stream.jsonl");
  FakeMeasurer m(log);
  auto policy = make_random_policy(tmpl->space());
  TuneOptions o;
  o.trials = 12;
  o.batch = 4;
  o.log = log;
  o.progress = false;
  Tuner tuner(tmpl->space(), m, *policy, test_key(), o);
  const TuneSummary s = tuner.run();
  CHECK(s.measured == 12);
  // 1, 2, 3, 4 records after each result of the first batch, and so on.
  REQUIRE(m.lines_seen.size() == 12);
  for (size_t i = 0; i < 12; ++i) CHECK(m.lines_seen[i] == int(i) + 1);

  const std::vector<Record> logged = read_log(log).records;
  REQUIRE(logged.size() == 12);
  // The log has them as they arrived (each batch reversed), records() as proposed.
  CHECK(logged[0].trial == 3);
  CHECK(logged[3].trial == 0);
  for (size_t i = 0; i < 12; ++i) CHECK(tuner.records()[i].trial == int64_t(i));
  CHECK(tuner.records()[0].config_index == logged[3].config_index);

  // Resume: trials continue after the highest number; nothing is measured twice.
  o.trials = 16;
  o.resume = true;
  auto policy2 = make_random_policy(tmpl->space());
  FakeMeasurer m2(log);
  Tuner resumed(tmpl->space(), m2, *policy2, test_key(), o);
  const TuneSummary s2 = resumed.run();
  CHECK(s2.resumed == 12);
  CHECK(s2.measured == 4);
  std::set<uint64_t> configs;
  std::set<int64_t> trials;
  for (const Record& r : read_log(log).records) {
    configs.insert(r.config_index);
    trials.insert(r.trial);
  }
  CHECK(configs.size() == 16);
  CHECK(trials == std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
}

TEST_CASE("the top k are re-measured interleaved and the best is chosen on that", "[measure]") {
  auto tmpl = make_template("gemm", {64, 64, 64});
  const fs::path log = scratch("remeasure.jsonl");
  FakeMeasurer m(log);
  auto policy = make_grid_policy(tmpl->space());
  TuneOptions o;
  o.trials = 20;
  o.batch = 10;
  o.log = log;
  o.progress = false;
  o.remeasure_top = 3;
  o.remeasure_rounds = 2;

  // Find the first run's winner, then make it slow on re-measurement.
  {
    FakeMeasurer probe(scratch("probe.jsonl"));
    TuneOptions p = o;
    p.log = scratch("probe.jsonl");
    p.remeasure_top = 0;
    auto grid = make_grid_policy(tmpl->space());
    const TuneSummary first = Tuner(tmpl->space(), probe, *grid, test_key(), p).run();
    REQUIRE(first.best);
    m.slowed = first.best->index();
  }
  Tuner tuner(tmpl->space(), m, *policy, test_key(), o);
  const TuneSummary s = tuner.run();
  CHECK(s.measured == 20);
  CHECK(s.remeasured == 3);
  REQUIRE(s.best);
  CHECK(s.best->index() != m.slowed);  // chosen on the re-measurement

  // Two rounds, each measuring all three in the same order: A B C, A B C.
  REQUIRE(m.calls.size() == 2 + 2);
  CHECK(m.calls[2].size() == 3);
  CHECK(m.calls[3] == m.calls[2]);
  CHECK(std::count(m.calls[2].begin(), m.calls[2].end(), m.slowed) == 1);

  const std::vector<Record> logged = read_log(log).records;
  REQUIRE(logged.size() == 23);
  int remeasured = 0;
  for (const Record& r : logged) {
    if (r.kind != RecordKind::remeasure) continue;
    ++remeasured;
    CHECK(r.trial == -1);
    CHECK(r.result.times_s.size() == 2);
    CHECK(r.result.details.rounds.remeasure_rounds == 2);
  }
  CHECK(remeasured == 3);
  // The log's best (export, bench, report) is the re-measurement's winner too.
  const std::vector<Record> best = best_records(logged, 1);
  REQUIRE(best.size() == 1);
  CHECK(best[0].kind == RecordKind::remeasure);
  CHECK(best[0].config_index == s.best->index());

  // Resuming a finished run counts only trials and does not re-measure again.
  o.resume = true;
  FakeMeasurer m2(log);
  auto policy2 = make_grid_policy(tmpl->space());
  const TuneSummary s2 = Tuner(tmpl->space(), m2, *policy2, test_key(), o).run();
  CHECK(s2.resumed == 20);
  CHECK(s2.measured == 0);
  CHECK(s2.remeasured == 0);
  CHECK(m2.calls.empty());
  CHECK(read_log(log).records.size() == 23);
}

TEST_CASE("bench's requests are measured in turn through a fake worker", "[measure]") {
  const char* env = std::getenv("CUTUNE_TEST_WORKER");
  WorkerOptions w;
  w.command = {env != nullptr ? env : CUTUNE_TEST_WORKER, "--fake"};
  WorkerSupervisor worker(w);
  WorkerTask task;
  task.arguments.resize(2);
  task.arguments[0] = {.name = "A", .elements = 16};
  task.arguments[1] = {.name = "C", .elements = 16, .init = ArgInit::nan, .is_output = true};
  worker.set_task(task, {});
  std::vector<MeasureRequest> requests(3);
  requests[0].id = 0;
  requests[0].kernel_name = "fake_ok";  // 1 ms
  requests[1].id = 1;
  requests[1].kernel_name = "fake_ok";  // 2 ms
  requests[2].id = 2;
  requests[2].kernel_name = "fake_wrong";
  std::vector<uint64_t> order;
  const std::vector<MeasureResult> r = measure_interleaved(
      [&](const MeasureRequest& q) {
        order.push_back(q.id);
        return worker.measure(q);
      },
      requests, 3);
  // A B C, then A B (C failed and is not sent again), A B.
  CHECK(order == std::vector<uint64_t>{0, 1, 2, 0, 1, 0, 1});
  REQUIRE(r.size() == 3);
  CHECK(r[0].ok());
  CHECK(r[0].times_s == std::vector<double>{1e-3, 1e-3, 1e-3});
  CHECK(r[1].times_s == std::vector<double>{2e-3, 2e-3, 2e-3});
  CHECK(r[0].details.rounds.rounds == 3);
  CHECK(r[0].details.rounds.round_medians_s.value_or(std::vector<double>{}).size() == 3);
  CHECK(!r[0].details.rounds.mixed_timers);
  CHECK(r[2].status == MeasureStatus::wrong_answer);
}

TEST_CASE("the GPU measurer's prefetch may run while a batch is measured", "[measure]") {
  // The measurer's own threads without a GPU: NVRTC compiles for sm_90, a fake worker answers
  // (it knows no GEMM kernel: each candidate comes back failed, with the worker's message).
  const char* env = std::getenv("CUTUNE_TEST_WORKER");
  auto tmpl = make_template("gemm", {64, 64, 32});
  GpuMeasureOptions o;
  o.check = false;
  o.compile_jobs = 2;
  o.worker_command = {env != nullptr ? env : CUTUNE_TEST_WORKER, "--fake"};
  std::unique_ptr<Measurer> m = make_gpu_measurer(*tmpl, o, target_limits("sm_90"));
  std::mt19937_64 rng(11);
  std::set<uint64_t> seen;
  auto batch_of = [&](size_t n) {
    std::vector<Config> out;
    while (out.size() < n) {
      std::optional<Config> c = tmpl->space().sample_valid(rng);
      if (c && seen.insert(c->index()).second) out.push_back(*c);
    }
    return out;
  };
  std::vector<Config> a = batch_of(4);
  for (int round = 0; round < 3; ++round) {
    std::vector<Config> b = batch_of(4);
    // b is handed over from another thread once a's first result is in (the tuner's
    // background proposal does the same).
    std::promise<void> started;
    std::future<void> go = started.get_future();
    std::thread proposer([&] {
      go.wait();
      m->prefetch(b);
    });
    bool first = true;
    std::vector<size_t> arrived;
    std::vector<MeasureResult> ra = m->measure_streaming(a, [&](size_t i, const MeasureResult&) {
      arrived.push_back(i);
      if (first) started.set_value();
      first = false;
    });
    proposer.join();
    CHECK(arrived.size() == a.size());
    REQUIRE(ra.size() == a.size());
    std::vector<MeasureResult> rb = m->measure(b);
    REQUIRE(rb.size() == b.size());
    for (const MeasureResult& r : rb) {
      INFO(r.error);
      // Compiled by the prefetch, then run by the (fake) worker.
      CHECK(r.error.find("fake backend") != std::string::npos);
      CHECK(r.details.compile.compiled_ahead.value_or(false));
      CHECK(r.compile_s > 0);
    }
    a = batch_of(4);
  }
}

TEST_CASE("a GPU run's loop: proposals in the background, each batch compiled ahead",
          "[measure]") {
  // The tuner as on a GPU (TuneOptions::set_pipeline) over the GPU measurer with NVRTC and a
  // fake worker: batch b+1 is proposed on its own thread and prefetched from there while b is
  // measured, so every batch after the first arrives compiled.
  const char* env = std::getenv("CUTUNE_TEST_WORKER");
  auto tmpl = make_template("gemm", {64, 64, 32});
  GpuMeasureOptions o;
  o.check = false;
  o.worker_command = {env != nullptr ? env : CUTUNE_TEST_WORKER, "--fake"};
  std::unique_ptr<Measurer> m = make_gpu_measurer(*tmpl, o, target_limits("sm_90"));
  std::unique_ptr<SearchPolicy> policy = make_random_policy(tmpl->space());
  TuneOptions t;
  t.trials = 12;
  t.batch = 4;
  t.seed = 3;
  t.progress = false;
  t.set_pipeline(true);
  REQUIRE(t.background_propose);
  Tuner tuner(tmpl->space(), *m, *policy, test_key(), t);
  const TuneSummary s = tuner.run();
  CHECK(s.measured == 12);
  REQUIRE(tuner.records().size() == 12);
  for (size_t i = 0; i < tuner.records().size(); ++i) {
    const MeasureResult& r = tuner.records()[i].result;
    INFO("trial " << i << ": " << r.error);
    CHECK(r.error.find("fake backend") != std::string::npos);
    CHECK(r.details.compile.compiled_ahead.value_or(false) == (i >= 4));
  }
}

TEST_CASE("bench --log takes records of this GPU kind only, unless any device", "[measure]") {
  auto rec = [](const std::string& device, uint64_t index, double t) {
    Record r;
    r.task = test_key();
    r.task.device_name = device;
    r.config_index = index;
    r.result.status = MeasureStatus::ok;
    r.result.timer = TimerKind::cupti;
    r.result.times_s = {t};
    r.timestamp = "2026-12-01T00:00:00Z";
    return r;
  };
  const std::vector<Record> log = {rec("NVIDIA A100", 1, 1e-6), rec("NVIDIA H200", 2, 3e-6),
                                   rec("emulator", 3, 1e-7)};
  const TaskKey k = test_key();
  DeviceBest h200 =
      best_record_on_device(log, k.op, k.shape, k.template_name, "NVIDIA H200", false);
  REQUIRE(h200.record);
  CHECK(h200.record->config_index == 2);
  CHECK(h200.other_devices == std::set<std::string>{"NVIDIA A100", "emulator"});
  DeviceBest l40 = best_record_on_device(log, k.op, k.shape, k.template_name, "NVIDIA L40", false);
  CHECK(!l40.record);
  CHECK(l40.other_devices.size() == 3);
  DeviceBest any = best_record_on_device(log, k.op, k.shape, k.template_name, "NVIDIA L40", true);
  REQUIRE(any.record);
  CHECK(any.record->config_index == 3);
  CHECK(!best_record_on_device(log, k.op, {1, 2, 3}, k.template_name, "NVIDIA H200", true).record);
}

TEST_CASE("the emulator measurer runs a tiny GEMM and labels its times", "[measure]") {
  auto tmpl = make_template("gemm", {16, 16, 8});
  EmulatorMeasureOptions o;
  o.host_threads = 1;
  auto m = make_emulator_measurer(*tmpl, o);
  CHECK(m->device_name() == "emulator");
  std::mt19937_64 rng(4);
  std::vector<Config> batch;
  for (int i = 0; i < 2; ++i) batch.push_back(*tmpl->space().sample_valid(rng));
  std::vector<size_t> streamed;
  const std::vector<MeasureResult> r =
      m->measure_streaming(batch, [&](size_t i, const MeasureResult&) { streamed.push_back(i); });
  CHECK(streamed == std::vector<size_t>{0, 1});
  REQUIRE(r.size() == 2);
  for (const MeasureResult& x : r) {
    INFO(x.error);
    CHECK(x.ok());
    CHECK(x.timer == TimerKind::emulator);
    CHECK(x.times_s.size() == 1);
    // Checked (not -1, "unchecked") and within the float32 rule for an 8-long reduction.
    CHECK(x.max_rel_error >= 0);
    CHECK(x.max_rel_error <= error_tolerance("float32", 8));
    CHECK(x.details.emulator.tolerance == error_tolerance("float32", 8));
    CHECK(x.details.emulator.emulated == true);
  }
}

namespace {

// Records the order of the loop's events: policy proposals and observations, and the
// measurer's prefetches and measurements, each with the batch's first configuration.
struct EventLog {
  std::vector<std::string> events;
};

class RecordingPolicy final : public SearchPolicy {
 public:
  RecordingPolicy(std::unique_ptr<SearchPolicy> inner, EventLog& log)
      : inner_(std::move(inner)), log_(log) {}
  void reset(uint64_t seed) override { inner_->reset(seed); }
  std::vector<Config> propose(int batch) override {
    std::vector<Config> c = inner_->propose(batch);
    log_.events.push_back("propose " + std::to_string(c.empty() ? 0 : c[0].index()));
    return c;
  }
  void observe(const std::vector<Config>& c, const std::vector<MeasureResult>& r) override {
    log_.events.push_back("observe " + std::to_string(c.empty() ? 0 : c[0].index()));
    inner_->observe(c, r);
  }
  std::string name() const override { return inner_->name(); }

 private:
  std::unique_ptr<SearchPolicy> inner_;
  EventLog& log_;
};

class RecordingMeasurer final : public Measurer {
 public:
  explicit RecordingMeasurer(EventLog& log) : log_(log) {}
  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    log_.events.push_back("measure " + std::to_string(batch[0].index()));
    std::vector<MeasureResult> out(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      out[i].status = MeasureStatus::ok;
      out[i].timer = TimerKind::cuda_event;
      out[i].times_s = {1e-6 * double(1 + batch[i].index() % 89)};
    }
    return out;
  }
  void prefetch(const std::vector<Config>& next) override {
    log_.events.push_back("prefetch " + std::to_string(next[0].index()));
  }
  std::string device_name() const override { return "fake"; }
  std::string target_arch() const override { return "sm_90"; }

 private:
  EventLog& log_;
};

std::vector<uint64_t> pipelined_run(const Template& tmpl, bool pipeline, EventLog& events) {
  RecordingMeasurer m(events);
  RecordingPolicy policy(make_random_policy(tmpl.space()), events);
  TuneOptions o;
  o.trials = 10;
  o.batch = 4;
  o.seed = 9;
  o.progress = false;
  o.pipeline = pipeline;
  Tuner tuner(tmpl.space(), m, policy, test_key(), o);
  const TuneSummary s = tuner.run();
  CHECK(s.measured == 10);
  std::vector<uint64_t> configs;
  for (const Record& r : tuner.records()) configs.push_back(r.config_index);
  return configs;
}

}  // namespace

TEST_CASE("the next batch is proposed and prefetched before the current one is measured",
          "[measure]") {
  auto tmpl = make_template("gemm", {64, 64, 64});
  EventLog events;
  const std::vector<uint64_t> a = pipelined_run(*tmpl, true, events);
  // Batches of 4, 4, 2: b1 is proposed and prefetched before b0 is measured, and so on.
  std::vector<std::string> kinds;
  for (const std::string& e : events.events) kinds.push_back(e.substr(0, e.find(' ')));
  CHECK(kinds == std::vector<std::string>{"propose", "propose", "prefetch", "measure", "observe",
                                          "propose", "prefetch", "measure", "observe", "measure",
                                          "observe"});
  // What was prefetched is what is measured next.
  CHECK(events.events[2].substr(9) == events.events[7].substr(8));
  CHECK(events.events[6].substr(9) == events.events[9].substr(8));

  // Deterministic for a seed; and no configuration twice.
  EventLog again;
  CHECK(pipelined_run(*tmpl, true, again) == a);
  CHECK(again.events == events.events);
  CHECK(std::set<uint64_t>(a.begin(), a.end()).size() == a.size());

  // Without the pipeline: propose, measure, observe, one batch at a time, no prefetch.
  EventLog plain;
  pipelined_run(*tmpl, false, plain);
  for (const std::string& e : plain.events) CHECK(e.rfind("prefetch", 0) != 0);
  CHECK(plain.events.size() == 9);
}

TEST_CASE("CUPTI's kernel records must account for the runs exactly", "[measure]") {
  CHECK(!cupti_record_problem(5, 5, 1));
  CHECK(cupti_record_problem(4, 5, 1) ==
        "CUPTI returned 4 kernel record(s) for 5 run(s) of 1 kernel(s)");
  CHECK(cupti_record_problem(6, 5, 1));    // a foreign kernel among ours
  CHECK(cupti_record_problem(10, 5, 1));   // two a run where one was launched
  CHECK(!cupti_record_problem(10, 5, 0));  // a library call of two kernels
  CHECK(cupti_record_problem(7, 5, 0));
  CHECK(cupti_record_problem(0, 5, 0));
  CHECK(cupti_record_problem(0, 0, 1));
}
