// The caches of a tuning round change nothing but its cost: a configuration's memoised
// feature row is the row its extractor computes afresh, and the tuner's memoised scores are
// the scores it computes for a configuration asked alone, in another batch or another order.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <unordered_set>
#include <vector>

#include "cost_model/features.h"
#include "kernels/template.h"
#include "src/ir/ir.h"
#include "src/ir/ir_equality.h"
#include "src/ir/ir_printer.h"
#include "src/tune/feature_cache.h"
#include "src/tune/model/model_policy.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

using test::distinct_valid;

using test::synthetic_result;

}  // namespace

TEST_CASE("a memoised IR feature row is the row extracted afresh", "[round_caches]") {
  auto tmpl = make_template("gemm", {256, 192, 128}, "gemm_nn");
  auto features = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  FeatureCache cache(*features);
  std::vector<Config> configs = distinct_valid(tmpl->space(), 60, 5);
  const int cols = features->size();
  // First asks fill the cache; later ones (another order, mixed into matrices) read it.
  for (const Config& c : configs) cache.row(c);
  REQUIRE(cache.cached() == configs.size());
  std::vector<Config> reversed(configs.rbegin(), configs.rend());
  cost_model::FeatureMatrix m = cache.matrix(reversed);
  CHECK(cache.cached() == configs.size());
  std::vector<float> fresh(cols);
  for (size_t i = 0; i < reversed.size(); ++i) {
    features->extract(reversed[i], fresh);
    INFO("configuration " << reversed[i].index());
    CHECK(same_bits(cache.row(reversed[i]), fresh));
    CHECK(same_bits(m.row(static_cast<int>(i)), fresh));
  }
}

TEST_CASE("memoised scores are the scores computed afresh", "[round_caches]") {
  auto tmpl = make_template("gemm", {256, 192, 128}, "gemm_nn");
  auto features = cost_model::make_knob_features(tmpl->space());
  std::vector<Config> measured = distinct_valid(tmpl->space(), 120, 1);
  std::vector<MeasureResult> results;
  for (const Config& c : measured) results.push_back(synthetic_result(c));
  std::vector<Config> asked = distinct_valid(tmpl->space(), 80, 2);

  {
    ModelPolicyOptions o;
    o.model.rounds = 20;
    o.annealing.chains = 16;
    o.annealing.max_steps = 20;
    // Two policies of one seed on the same records fit the same models; one is asked in one
    // batch (after its plan filled its caches), the other one configuration at a time in
    // reverse order, each twice.
    ModelPolicy a(tmpl->space(), *features, o), b(tmpl->space(), *features, o);
    a.reset(3);
    b.reset(3);
    a.observe(measured, results);
    b.observe(measured, results);
    a.refit_and_plan();
    b.refit_and_plan();
    std::vector<float> batch = a.predict(asked);
    std::vector<float> again = a.predict(asked);
    CHECK(same_bits(batch, again));
    for (size_t i = asked.size(); i-- > 0;) {
      std::vector<float> one = b.predict({asked[i]});
      std::vector<float> twice = b.predict({asked[i], asked[i]});
      INFO("configuration " << asked[i].index());
      CHECK(same_bits(one, {batch.data() + i, 1}));
      CHECK(same_bits(twice, std::vector<float>{batch[i], batch[i]}));
    }
    // The acquisition from the members' standardised scores: mean + kappa * sample std.
    std::vector<std::vector<float>> z = b.surrogate().member_scores(asked);
    REQUIRE(z.size() == 5);
    for (size_t i = 0; i < asked.size(); ++i) {
      double sum = 0, sq = 0;
      for (const auto& member : z) sum += member[i];
      double mean = sum / z.size();
      for (const auto& member : z) sq += (member[i] - mean) * (member[i] - mean);
      double expected = mean + o.kappa * std::sqrt(sq / (z.size() - 1));
      CHECK(batch[i] == Approx(expected).margin(1e-5));
    }
  }
}

TEST_CASE("a refit replaces the memoised scores", "[round_caches]") {
  auto tmpl = make_template("gemm", {256, 192, 128}, "gemm_nn");
  auto features = cost_model::make_knob_features(tmpl->space());
  std::vector<Config> measured = distinct_valid(tmpl->space(), 120, 1);
  std::vector<MeasureResult> results;
  for (const Config& c : measured) results.push_back(synthetic_result(c));
  std::vector<Config> asked = distinct_valid(tmpl->space(), 80, 2);
  const std::vector<Config> first(measured.begin(), measured.begin() + 60);
  const std::vector<Config> second(measured.begin() + 60, measured.end());
  const std::vector<MeasureResult> first_r(results.begin(), results.begin() + 60);
  const std::vector<MeasureResult> second_r(results.begin() + 60, results.end());

  // Two policies of one seed fit the same ensembles on the same records, fit by fit; the one
  // that scored between its fits must score after the second as the one that did not.
  ModelPolicyOptions o;
  o.model.rounds = 20;
  o.annealing.chains = 16;
  o.annealing.max_steps = 20;
  ModelPolicy a(tmpl->space(), *features, o), b(tmpl->space(), *features, o);
  a.reset(4);
  b.reset(4);
  a.observe(first, first_r);
  a.refit_and_plan();
  std::vector<float> before = a.predict(asked);
  a.observe(second, second_r);
  a.refit_and_plan();
  b.observe(first, first_r);
  b.refit_and_plan();
  b.observe(second, second_r);
  b.refit_and_plan();
  std::vector<float> after = a.predict(asked);
  CHECK(same_bits(after, b.predict(asked)));
  CHECK_FALSE(same_bits(after, before));
}

TEST_CASE("IR nodes from pooled memory survive the thread that built them", "[round_caches]") {
  // Nodes come from per-thread free lists (src/ir/ir.cc): kernels built on threads that then
  // end, read and freed on this one, and built again on fresh threads, are the kernels this
  // thread builds.
  auto tmpl = make_template("gemm", {256, 192, 128}, "gemm_nn");
  std::vector<Config> configs = distinct_valid(tmpl->space(), 24, 6);
  for (int generation = 0; generation < 3; ++generation) {
    std::vector<ir::Kernel> built(configs.size());
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        for (size_t i = t; i < configs.size(); i += 3) built[i] = tmpl->build(configs[i]);
      });
    }
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < configs.size(); ++i) {
      ir::Kernel here = tmpl->build(configs[i]);
      INFO("configuration " << configs[i].index());
      CHECK(ir::equal(built[i].body, here.body));
      CHECK(ir::to_string(built[i]) == ir::to_string(here));
    }
  }
}

TEST_CASE("a feature cache at its size limit empties itself and stays exact", "[round_caches]") {
  auto tmpl = make_template("gemm", {256, 192, 128}, "gemm_nn");
  auto features = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  const int cols = features->size();
  // Room for 10 rows: 25 distinct configurations, asked three times over.
  FeatureCache cache(*features, 10 * cols * sizeof(float));
  std::vector<Config> configs = distinct_valid(tmpl->space(), 25, 8);
  std::vector<float> fresh(cols);
  for (int pass = 0; pass < 3; ++pass) {
    for (const Config& c : configs) {
      features->extract(c, fresh);
      CHECK(same_bits(cache.row(c), fresh));
      CHECK(cache.cached() <= 10);
    }
  }
  CHECK(cache.clears() >= 7);
  cost_model::FeatureMatrix m = cache.matrix(std::span<const Config>(configs.data(), 8));
  for (int i = 0; i < 8; ++i) {
    features->extract(configs[i], fresh);
    CHECK(same_bits(m.row(i), fresh));
  }
}

TEST_CASE("training on the splittable IR columns only gives the same model", "[round_caches]") {
  // IR features of a GEMM template: about a third of the columns vary, and many order the
  // configurations as another does. The trees trained without them are the same trees.
  auto tmpl = make_template("gemm", {512, 512, 512}, "gemm_nn");
  auto features = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  FeatureCache cache(*features);
  std::vector<Config> train = distinct_valid(tmpl->space(), 400, 12);
  std::vector<Config> test(train.begin() + 300, train.end());
  train.resize(300);
  std::vector<Config> other = distinct_valid(tmpl->space(), 300, 13);
  test.insert(test.end(), other.begin(), other.end());
  std::vector<float> labels;
  for (const Config& c : train) labels.push_back(float(1.0 / synthetic_result(c).times_s[0]));
  cost_model::FeatureMatrix x = cache.matrix(train), y = cache.matrix(test);
  cost_model::RankModelOptions all_columns;
  all_columns.rounds = 40;
  all_columns.drop_redundant_columns = false;
  cost_model::RankModelOptions dropped = all_columns;
  dropped.drop_redundant_columns = true;
  cost_model::RankModel a("ir-test", all_columns), b("ir-test", dropped);
  a.fit(x, labels);
  b.fit(x, labels);
  // With max_bin 2 no column has few enough values to be a rank copy: exact copies only.
  cost_model::RankModelOptions copies_only = dropped;
  copies_only.max_bin = 2;
  cost_model::RankModel c("ir-test", copies_only);
  c.fit(x, labels);
  INFO(b.columns().size() << " of " << x.cols << " columns kept, " << c.columns().size()
                          << " without the rank copies");
  CHECK(b.columns().size() < size_t(x.cols) / 2);
  CHECK(b.columns().size() < c.columns().size());
  std::vector<float> pa = a.predict(y), pb = b.predict(y);
  CHECK(same_bits(pa, pb));
  CHECK(same_bits(pb, b.predict_with_xgboost(y)));
}
