#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "cost_model/rank_model.h"
#include "tests/cost_model/synthetic_tasks.h"

using namespace cutune::cost_model;
using cutune::cost_model::testing::make_task;
using cutune::cost_model::testing::SyntheticTask;

namespace {

constexpr const char* kSchema = "test-features/1";

// Bit-for-bit equality, NaN included, with the first difference reported.
void require_same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("row " << i << ": " << a[i] << " vs " << b[i]);
    REQUIRE(std::memcmp(&a[i], &b[i], sizeof(float)) == 0);
  }
}

// A task with the redundancy of real IR features: constant columns, exact copies of
// informative columns, and a column with missing values.
SyntheticTask redundant_task(int rows, uint64_t seed) {
  SyntheticTask base = make_task(rows, 10, seed);
  SyntheticTask t{FeatureMatrix::zeros(rows, 16), base.labels};
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < 10; ++c) t.x.at(r, c + 2) = base.x.at(r, c);
    t.x.at(r, 0) = 3.0f;              // constant, before the informative ones
    t.x.at(r, 1) = base.x.at(r, 2);   // a copy of column 4 placed before it
    t.x.at(r, 12) = base.x.at(r, 0);  // a copy of column 2
    t.x.at(r, 13) = 0.0f;             // constant
    t.x.at(r, 14) = base.x.at(r, 3);  // a copy of column 5
    t.x.at(r, 15) = r % 7 == 0 ? std::numeric_limits<float>::quiet_NaN() : base.x.at(r, 1);
  }
  return t;
}

// Rows where the copies differ from their originals and constants take other values: a
// model that read a dropped column instead of the kept one would predict differently.
FeatureMatrix scrambled_rows(int rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.2f, 1.2f);
  FeatureMatrix x = FeatureMatrix::zeros(rows, 16);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < 16; ++c) x.at(r, c) = u(rng);
    if (r % 5 == 0) x.at(r, 15) = std::numeric_limits<float>::quiet_NaN();
  }
  return x;
}

}  // namespace

TEST_CASE("flat trees predict XGBoost's floats bit for bit", "[tree_ensemble]") {
  SyntheticTask t = make_task(600, 12, 3);
  FeatureMatrix test = make_task(300, 12, 4).x;
  for (RankObjective objective : {RankObjective::pairwise, RankObjective::regression}) {
    RankModelOptions o;
    o.objective = objective;
    o.rounds = 40;
    RankModel model(kSchema, o);
    model.fit(t.x, t.labels);
    require_same_floats(model.predict(test), model.predict_with_xgboost(test));
    std::vector<float> margin(test.rows);
    for (int r = 0; r < test.rows; ++r) margin[r] = 0.01f * float(r % 17) - 0.05f;
    require_same_floats(model.predict(test, margin), model.predict_with_xgboost(test, margin));
  }
}

TEST_CASE("dropping constant and copied columns leaves the trees unchanged", "[tree_ensemble]") {
  SyntheticTask t = redundant_task(500, 7);
  FeatureMatrix test = scrambled_rows(400, 8);
  RankModelOptions all_columns;
  all_columns.rounds = 60;
  all_columns.drop_redundant_columns = false;
  RankModelOptions dropped = all_columns;
  dropped.drop_redundant_columns = true;
  RankModel a(kSchema, all_columns), b(kSchema, dropped);
  a.fit(t.x, t.labels);
  b.fit(t.x, t.labels);
  CHECK(a.columns().size() == 16);
  // Kept: the copy at 1 (it comes first), 2, 3, 5 ... 11, and 15; dropped: the constants 0
  // and 13, column 4 (a copy of 1), 12 (of 2) and 14 (of 5).
  CHECK(b.columns() == std::vector<int>{1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 15});
  require_same_floats(a.predict(test), b.predict(test));
  require_same_floats(b.predict(test), b.predict_with_xgboost(test));
  require_same_floats(a.predict(t.x), b.predict(t.x));
}

TEST_CASE("a saved model with dropped columns loads and predicts the same", "[tree_ensemble]") {
  SyntheticTask t = redundant_task(300, 9);
  FeatureMatrix test = scrambled_rows(200, 10);
  RankModelOptions o;
  o.rounds = 30;
  RankModel model(kSchema, o);
  model.fit(t.x, t.labels);
  auto path = std::filesystem::temp_directory_path() /
              ("cutune_test_tree_ensemble_" + std::to_string(::getpid()) + ".json");
  model.save(path);
  RankModel loaded = RankModel::load(path, kSchema, 16);
  std::filesystem::remove(path);
  CHECK(loaded.columns() == model.columns());
  require_same_floats(loaded.predict(test), model.predict(test));
  require_same_floats(loaded.predict_with_xgboost(test), model.predict(test));
}

TEST_CASE("a task with nothing to split on predicts its base score", "[tree_ensemble]") {
  FeatureMatrix x = FeatureMatrix::zeros(50, 4);
  std::vector<float> labels(50);
  for (int r = 0; r < 50; ++r) labels[r] = float(r % 5) / 4.0f;
  RankModel model(kSchema, RankModelOptions{});
  model.fit(x, labels);
  FeatureMatrix other = scrambled_rows(10, 1);
  other = FeatureMatrix{10, 4, std::vector<float>(other.data.begin(), other.data.begin() + 40)};
  std::vector<float> p = model.predict(other);
  require_same_floats(p, model.predict_with_xgboost(other));
  for (float v : p) CHECK(v == p[0]);
}

TEST_CASE("a column ordering the rows as an earlier one is dropped, trees unchanged",
          "[tree_ensemble]") {
  // Knob-like columns of few distinct values: 1 an increasing function of 0 (dropped), 2 a
  // decreasing one (kept: the same splits, but found from the other side), 3 an increasing
  // function of 0 with many distinct values elsewhere (kept: not a rank copy), 4 a coarser
  // quantisation of 0 (kept), 5-7 informative.
  SyntheticTask base = make_task(600, 8, 21);
  const int rows = base.x.rows;
  SyntheticTask t{FeatureMatrix::zeros(rows, 8), base.labels};
  for (int r = 0; r < rows; ++r) {
    float q = std::floor(base.x.at(r, 0) * 12.0f) / 12.0f;  // 12 distinct values
    t.x.at(r, 0) = q;
    t.x.at(r, 1) = std::log2(1.0f + 3.0f * q);
    t.x.at(r, 2) = 1.0f - q;
    t.x.at(r, 3) = q + 1e-3f * base.x.at(r, 7);
    t.x.at(r, 4) = std::floor(q * 4.0f);
    for (int c = 5; c < 8; ++c) t.x.at(r, c) = base.x.at(r, c - 4);
  }
  // Rows on which column 1 is not the function of column 0 it was in training.
  FeatureMatrix test = scrambled_rows(300, 22);
  test = FeatureMatrix{300, 8, std::vector<float>(test.data.begin(), test.data.begin() + 2400)};
  RankModelOptions all_columns;
  all_columns.rounds = 60;
  all_columns.drop_redundant_columns = false;
  RankModelOptions dropped = all_columns;
  dropped.drop_redundant_columns = true;
  RankModel a(kSchema, all_columns), b(kSchema, dropped);
  a.fit(t.x, t.labels);
  b.fit(t.x, t.labels);
  CHECK(b.columns() == std::vector<int>{0, 2, 3, 4, 5, 6, 7});
  require_same_floats(a.predict(test), b.predict(test));
  require_same_floats(a.predict(t.x), b.predict(t.x));
  require_same_floats(b.predict(test), b.predict_with_xgboost(test));
}

TEST_CASE("columns looked for among a larger matrix's are the columns looked for among all",
          "[tree_ensemble]") {
  // redundant_task's columns, plus columns that become constant or copies on rows that miss a
  // few: 16 differs from 3 on rows 0-2 only, 17 is constant but on row 5, 18 orders the rows as
  // 7 does but on rows 10-11 (quantised, so that ranks are compared).
  SyntheticTask base = redundant_task(300, 31);
  const int rows = base.x.rows;
  FeatureMatrix x = FeatureMatrix::zeros(rows, 20);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < 16; ++c) x.at(r, c) = base.x.at(r, c);
    x.at(r, 16) = r < 3 ? -1.0f : x.at(r, 3);
    x.at(r, 17) = r == 5 ? 2.0f : 1.0f;
    x.at(r, 18) = std::floor(x.at(r, 7) * 8.0f);
    x.at(r, 19) = r == 10 || r == 11 ? 9.0f - x.at(r, 18) : 2.0f * x.at(r, 18) + 1.0f;
  }
  const std::vector<int> full = splittable_columns(x, 64);
  CHECK(full == std::vector<int>{1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 15, 16, 17, 18, 19});
  std::mt19937_64 rng(32);
  std::uniform_int_distribution<int> pick(0, rows - 1);
  int narrower = 0;
  for (int draw = 0; draw < 40; ++draw) {
    std::vector<int> resample(draw < 20 ? rows : rows / 10);
    for (int& r : resample) r = pick(rng);
    FeatureMatrix sub = select_rows(x, resample);
    std::vector<int> among_all = splittable_columns(sub, 64);
    CHECK(splittable_columns(sub, 64, full) == among_all);
    narrower += among_all.size() < full.size();
  }
  // Some resamples miss rows 0-2, 5 or 10-11, which drops a column the full matrix keeps.
  CHECK(narrower > 0);

  // fit_among on a resample is fit on it: the same columns and the same floats.
  std::vector<int> resample(rows / 2);
  for (int& r : resample) r = 3 + pick(rng) % (rows - 12);  // never rows 0-2
  FeatureMatrix sub = select_rows(x, resample);
  std::vector<float> labels(resample.size());
  for (size_t i = 0; i < resample.size(); ++i) labels[i] = base.labels[resample[i]];
  RankModelOptions o;
  o.rounds = 30;
  RankModel a(kSchema, o), b(kSchema, o);
  a.fit(sub, labels);
  b.fit_among(sub, full, labels);
  CHECK(a.columns() == b.columns());
  CHECK(b.columns().size() < full.size());
  require_same_floats(a.predict(x), b.predict(x));
  CHECK_THROWS_AS(b.fit_among(sub, std::vector<int>{0, 20}, labels), std::invalid_argument);
}
