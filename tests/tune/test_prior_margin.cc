// The analytical prior as the model-based search's margin source (src/tune/prior_margin.h):
// a never-measured task's first batch comes from the prior, and it fades as records come.

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "cost_model/ir_features.h"
#include "kernels/template.h"
#include "src/target/device_info.h"
#include "src/tune/model/model_policy.h"
#include "src/tune/order_study.h"
#include "src/tune/prior_margin.h"
#include "tests/tune/tune_fixtures.h"

using namespace cutune;

namespace {

struct PriorTask {
  std::unique_ptr<Template> tmpl;
  std::unique_ptr<cost_model::FeatureExtractor> features;
  std::shared_ptr<const PriorMargin> prior;

  PriorTask(std::vector<int64_t> shape, const std::string& name, const std::string& family)
      : tmpl(make_template("gemm", shape, name)),
        features(cost_model::make_ir_features(*tmpl, verifier_limits("sm_90"))),
        prior(make_prior_margin(*features, target_limits("sm_90"), family)) {}

  double seconds(const Config& c) const {
    std::vector<float> row(features->size());
    features->extract(c, row);
    return prior->prior().estimate(row).seconds;
  }
};

}  // namespace

TEST_CASE("the prior margin fades as the task's records come") {
  PriorTask t({512, 512, 512}, "gemm_nn", "simt");
  REQUIRE(t.prior);
  CHECK(t.prior->weight(0) == 1.0);
  CHECK(t.prior->weight(32) == Approx(0.5));
  CHECK(t.prior->weight(320) < 0.1);
  auto knobs = cost_model::make_knob_features(t.tmpl->space());
  CHECK(make_prior_margin(*knobs, target_limits("sm_90"), "simt") == nullptr);
  // A transfer model, which was measured, takes the margin's place; the prior otherwise.
  ModelPolicyOptions o;
  CHECK(o.margin() == nullptr);
  o.prior = t.prior;
  CHECK(o.margin() == t.prior.get());
}

TEST_CASE("xgb with the analytical prior draws its first batch from the prior's best") {
  PriorTask t({2048, 2048, 2048}, "gemm_fp16_wgmma_nt", "wgmma");
  ModelPolicyOptions o = test::small_model();
  o.epsilon = 0;
  o.prior = t.prior;
  ModelPolicy with(t.tmpl->space(), *t.features, o);
  with.reset(3);
  const std::vector<Config> first = with.propose(8);
  REQUIRE(first.size() == 8);

  // Against 200 random valid configurations, each proposal sits in the prior's best fifth;
  // without the prior, the first batch is random (drawn toward the knobs' bounds).
  std::mt19937_64 rng(5);
  std::vector<double> random;
  for (int i = 0; i < 200; ++i) {
    if (auto c = t.tmpl->space().sample_valid(rng, 10000)) random.push_back(t.seconds(*c));
  }
  std::sort(random.begin(), random.end());
  const double fifth = random[random.size() / 5];
  for (const Config& c : first) CHECK(t.seconds(c) <= fifth);

  ModelPolicyOptions plain = test::small_model();
  plain.epsilon = 0;
  ModelPolicy without(t.tmpl->space(), *t.features, plain);
  without.reset(3);
  int in_fifth = 0;
  for (const Config& c : without.propose(8)) in_fifth += t.seconds(c) <= fifth;
  CHECK(in_fifth < 8);
}

TEST_CASE("order figures: best of the first F and trials to 95% of the sample's best") {
  const std::vector<double> t{1, 0, 5, 10, 9.6, 2};  // best 10; 9.6 is within 95%
  CHECK(order_figures(t, {3}, 1).best_of_first == 1.0);
  CHECK(order_figures(t, {3}, 1).trials_to_95 == 1);
  const OrderFigures slow = order_figures(t, {1, 0, 5, 2, 4, 3}, 3);
  CHECK(slow.best_of_first == Approx(0.2));
  CHECK(slow.trials_to_95 == 5);
  CHECK(order_figures(t, {0, 1}, 2).trials_to_95 == 7);  // never: the sample's size + 1

  // A prior that orders the sample exactly: perfect start and correlation 1; reversed: the
  // last; the default's front (the best first) reaches it at once.
  std::vector<float> exact(t.begin(), t.end()), reversed;
  for (double v : t) reversed.push_back(float(-v));
  const OrderStudy good = study_orders(t, exact, {}, 2, 200, 1);
  CHECK(good.prior.best_of_first == 1.0);
  CHECK(good.prior.trials_to_95 == 1);
  CHECK(good.spearman == Approx(1.0));
  CHECK(good.ok == 5);
  CHECK(good.random.best_of_first < 1.0);
  const OrderStudy bad = study_orders(t, reversed, {3}, 2, 200, 1);
  CHECK(bad.prior.trials_to_95 == 5);  // 1 (0), then 0, 2, 5, 9.6
  CHECK(bad.spearman == Approx(-1.0));
  CHECK(bad.fronted.trials_to_95 == 1);
  CHECK(bad.fronted.best_of_first == 1.0);
}
