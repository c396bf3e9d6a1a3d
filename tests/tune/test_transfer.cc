#include <catch2/catch.hpp>

#include <algorithm>

#include "cost_model/ir_features.h"
#include "kernels/template.h"
#include "src/tune/model/model_policy.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/transfer_model.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

// Records of the synthetic task measured on another "GPU", as a log would hold them.
std::vector<Record> other_gpu_records(const replay::ReplayTask& task, int n) {
  ReplayMeasurerAdapter m(task);
  std::vector<Record> out;
  for (uint64_t i = 0; i < task.space().size() && static_cast<int>(out.size()) < n; i += 2) {
    Config c = task.space().get(i);
    if (!task.space().is_valid(c)) continue;
    Record r;
    r.task.op = "synthetic";
    r.task.device_name = "Other GPU";
    r.config_index = c.index();
    r.knobs = c.to_json()["knobs"];
    r.result = m.measure({c})[0];
    out.push_back(r);
  }
  return out;
}

}  // namespace

TEST_CASE("normalised labels: best is 1, failures stay 0") {
  std::vector<double> t = {2.0, 0.0, 4.0};
  CHECK(normalised_labels(t) == std::vector<float>{0.5f, 0.0f, 1.0f});
  std::vector<double> none = {0.0, 0.0};
  CHECK(normalised_labels(none) == std::vector<float>{0.0f, 0.0f});
}

TEST_CASE("the transfer model's scores enter the local model as its base margin") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  test::ValueFeatures features(task.space());
  RecordFeaturizer featurize = [&](const Record& r, std::span<float> out) {
    features.extract(task.space().from_json(nlohmann::json{{"knobs", r.knobs}}), out);
    return true;
  };
  TaskKey own;
  own.op = "synthetic";
  own.device_name = "Synthetic GPU";
  auto transfer = std::make_shared<TransferModel>(TransferModel::train(
      other_gpu_records(task, 150), own, featurize, features.size(), features.schema()));
  CHECK(transfer->tasks() == 1);
  CHECK(transfer->weight(0) == 1.0);
  CHECK(transfer->weight(64) == 0.5);

  // Excluding the only task leaves nothing: a one-line user error.
  TaskKey other = other_gpu_records(task, 1)[0].task;
  CHECK_THROWS_AS(TransferModel::train(other_gpu_records(task, 10), other, featurize,
                                       features.size(), features.schema()),
                  std::invalid_argument);

  ModelPolicyOptions with;
  with.model.rounds = 20;
  with.plan_size = 16;
  with.min_batch = 16;  // the first batch with the transfer model is 16 too, as without
  with.transfer = transfer;
  ModelPolicyOptions without = with;
  without.transfer = nullptr;
  ModelPolicy a(task.space(), features, with);
  ModelPolicy b(task.space(), features, without);

  // Before any local data, only the transfer model can score.
  std::vector<Config> probe;
  for (uint64_t i = 0; i < 40; ++i) probe.push_back(task.space().get(i));
  CHECK_FALSE(a.predict(probe).empty());
  CHECK(b.predict(probe).empty());

  ReplayMeasurerAdapter m(task);
  std::vector<Config> local;
  for (uint64_t i = 1; i < task.space().size() && local.size() < 24; i += 7) {
    Config c = task.space().get(i);
    if (task.space().is_valid(c)) local.push_back(c);
  }
  a.observe(local, m.measure(local));
  b.observe(local, m.measure(local));
  a.refit_and_plan();
  b.refit_and_plan();
  CHECK(a.predict(probe) != b.predict(probe));

  // And it changes what is proposed from the very first batch.
  ModelPolicy fresh_a(task.space(), features, with);
  ModelPolicy fresh_b(task.space(), features, without);
  fresh_a.reset(9);
  fresh_b.reset(9);
  std::vector<uint64_t> ia, ib;
  for (const Config& c : fresh_a.propose(16)) ia.push_back(c.index());
  for (const Config& c : fresh_b.propose(16)) ib.push_back(c.index());
  CHECK(ia != ib);

  // And for the better: on seeds 1-5, the first batch proposed with the other GPU's model runs
  // faster (median of its measured times, failures counted as the slowest) than the first batch
  // without it, which can only be a space-filling guess.
  auto median_time = [&](const std::vector<Config>& batch) {
    std::vector<double> t;
    for (const MeasureResult& r : m.measure(batch)) t.push_back(r.ok() ? r.median_s() : 1e9);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  int better = 0;
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    ModelPolicy pa(task.space(), features, with);
    ModelPolicy pb(task.space(), features, without);
    pa.reset(seed);
    pb.reset(seed);
    better += median_time(pa.propose(16)) < median_time(pb.propose(16));
  }
  CHECK(better == 5);
}

TEST_CASE("a Kernel Tuner cache becomes the records of its task, failures included") {
  replay::ReplayTask task = replay::ReplayTask::from_cache(test::synthetic_cache());
  std::vector<Record> records = cache_records(task);
  CHECK(records.size() == task.cache().entries.size());
  int failed = 0;
  for (const Record& r : records) {
    CHECK(r.task == replay_task_key(task));
    Config c = task.space().from_json(nlohmann::json{{"knobs", r.knobs}});
    CHECK(c.index() == r.config_index);
    const replay::KtEntry* e = task.find(c);
    REQUIRE(e != nullptr);
    CHECK(r.result.ok() == e->valid);
    if (e->valid) CHECK(r.result.mean_s() == Approx(e->time_ms * 1e-3));
    failed += !e->valid;
  }
  CHECK(failed > 0);
  CHECK(replay_task_key(task).device_name == "Synthetic GPU");
}

TEST_CASE("the GPU tasks' featurizer places records of templates with the same IR features") {
  // gemm_bf16_wgmma_nt is gemm_fp16_wgmma_nt for another element type: the same knobs, loops
  // and buffers. gemm_fp16_nt (mma.sync) and gemm_nn (fp32) have features of their own.
  ir::TargetLimits limits;
  auto bf16 = make_template("gemm_bf16", {512, 512, 512}, "gemm_bf16_wgmma_nt");
  auto features = cost_model::make_ir_features(*bf16, limits);
  RecordFeaturizer featurize = template_featurizer(*features, limits);
  auto fp16 = make_template("gemm_fp16", {1024, 512, 256}, "gemm_fp16_wgmma_nt");
  REQUIRE(fp16->space().size() == bf16->space().size());
  auto record_of = [](const std::string& op, std::vector<int64_t> shape, const std::string& name,
                      uint64_t index) {
    Record r;
    r.task.op = op;
    r.task.shape = std::move(shape);
    r.task.template_name = name;
    r.config_index = index;
    return r;
  };
  std::vector<float> row(features->size()), expected(features->size());
  const Config c = bf16->reference_configs().front();
  REQUIRE(
      featurize(record_of("gemm_fp16", {1024, 512, 256}, "gemm_fp16_wgmma_nt", c.index()), row));
  // The fp16 configuration's own features: the same as the bf16 one's at that shape.
  auto fp16_features = cost_model::make_ir_features(*fp16, limits);
  fp16_features->extract(fp16->space().get(c.index()), expected);
  CHECK(row == expected);
  auto bf16_there = make_template("gemm_bf16", {1024, 512, 256}, "gemm_bf16_wgmma_nt");
  cost_model::make_ir_features(*bf16_there, limits)
      ->extract(bf16_there->space().get(c.index()), expected);
  CHECK(row == expected);
  // Own template at another shape: placed, as before.
  CHECK(featurize(record_of("gemm_bf16", {256, 256, 256}, "gemm_bf16_wgmma_nt", c.index()), row));
  // Other features, an unknown template, an index outside the space: skipped.
  CHECK_FALSE(featurize(record_of("gemm_fp16", {512, 512, 512}, "gemm_fp16_nt", 0), row));
  CHECK_FALSE(featurize(record_of("gemm", {512, 512, 512}, "gemm_nn", 0), row));
  CHECK_FALSE(featurize(record_of("gemm_fp16", {512, 512, 512}, "no_such_template", 0), row));
  CHECK_FALSE(featurize(
      record_of("gemm_fp16", {1024, 512, 256}, "gemm_fp16_wgmma_nt", fp16->space().size()), row));
}
