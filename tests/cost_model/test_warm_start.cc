#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <vector>

#include <unistd.h>

#include "cost_model/rank_metrics.h"
#include "cost_model/rank_model.h"
#include "tests/cost_model/synthetic_tasks.h"

using namespace cutune::cost_model;
using cutune::cost_model::testing::make_task;
using cutune::cost_model::testing::SyntheticTask;

namespace {

constexpr const char* kSchema = "test-features/1";

void require_same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("row " << i << ": " << a[i] << " vs " << b[i]);
    REQUIRE(std::memcmp(&a[i], &b[i], sizeof(float)) == 0);
  }
}

FeatureMatrix first_rows(const FeatureMatrix& x, int rows) {
  std::vector<int> idx(rows);
  std::iota(idx.begin(), idx.end(), 0);
  return select_rows(x, idx);
}

}  // namespace

TEST_CASE("a warm-started booster predicts from all its trees", "[warm_start]") {
  SyntheticTask t = make_task(600, 12, 11);
  // Column 0 is constant over the first fit's rows (so the fit drops it) and varies over the
  // boost's: the booster must keep reading the columns of its fit.
  for (int r = 0; r < 300; ++r) t.x.at(r, 7) = 0.5f;
  FeatureMatrix test = make_task(200, 12, 12).x;
  RankModelOptions o;
  o.rounds = 30;
  RankModel model(kSchema, o);
  model.fit(first_rows(t.x, 300), std::vector<float>(t.labels.begin(), t.labels.begin() + 300));
  REQUIRE(model.trees() == 30);
  const std::vector<int> fit_columns = model.columns();
  REQUIRE(std::find(fit_columns.begin(), fit_columns.end(), 7) == fit_columns.end());
  std::vector<float> before = model.predict(test);

  model.boost(t.x, t.labels, 10);
  REQUIRE(model.trees() == 40);
  CHECK(model.columns() == fit_columns);
  std::vector<float> after = model.predict(test);
  // The flat copy holds the new trees: XGBoost's own predictor (every tree) agrees bit for bit,
  // with and without a base margin, and the new trees moved the scores.
  require_same_floats(after, model.predict_with_xgboost(test));
  std::vector<float> margin(test.rows);
  for (int r = 0; r < test.rows; ++r) margin[r] = 0.02f * float(r % 5);
  require_same_floats(model.predict(test, margin), model.predict_with_xgboost(test, margin));
  int moved = 0;
  for (size_t i = 0; i < after.size(); ++i) moved += after[i] != before[i];
  CHECK(moved > 100);

  // A saved and reloaded booster has the same trees.
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("cutune_warm_start_" + std::to_string(getpid()) + ".json");
  model.save(path);
  RankModel loaded = RankModel::load(path, kSchema, 12);
  std::filesystem::remove(path);
  CHECK(loaded.trees() == 40);
  require_same_floats(loaded.predict(test), after);
}

TEST_CASE("boosting on new records learns them", "[warm_start]") {
  // Fit on 200 rows; the next 400 are unseen. Boosting on all 600 must rank the new rows
  // better than the model without the new trees, nearly as well as a fresh fit on all.
  SyntheticTask t = make_task(600, 10, 21);
  RankModelOptions o;
  o.rounds = 60;
  RankModel warm(kSchema, o);
  warm.fit(first_rows(t.x, 200), std::vector<float>(t.labels.begin(), t.labels.begin() + 200));
  std::vector<int> fresh_rows(400);
  std::iota(fresh_rows.begin(), fresh_rows.end(), 200);
  FeatureMatrix fresh = select_rows(t.x, fresh_rows);
  std::vector<float> fresh_labels = select(t.labels, fresh_rows);
  double old_accuracy = pairwise_accuracy(warm.predict(fresh), fresh_labels);
  warm.boost(t.x, t.labels, 20);
  double warm_accuracy = pairwise_accuracy(warm.predict(fresh), fresh_labels);
  RankModel full(kSchema, o);
  full.fit(t.x, t.labels);
  double full_accuracy = pairwise_accuracy(full.predict(fresh), fresh_labels);
  INFO("old " << old_accuracy << ", warm " << warm_accuracy << ", full " << full_accuracy);
  CHECK(warm_accuracy > old_accuracy + 0.02);
  CHECK(warm_accuracy > full_accuracy - 0.05);
}

TEST_CASE("boost refuses what it cannot continue", "[warm_start]") {
  SyntheticTask t = make_task(100, 8, 31);
  RankModel model(kSchema, RankModelOptions{.rounds = 5});
  CHECK_THROWS_AS(model.boost(t.x, t.labels, 3), std::logic_error);
  model.fit(t.x, t.labels);
  CHECK_THROWS_AS(model.boost(make_task(100, 9, 32).x, t.labels, 3), std::invalid_argument);
  CHECK_THROWS_AS(model.boost(t.x, std::vector<float>(99), 3), std::invalid_argument);
  CHECK_THROWS_AS(model.boost(t.x, t.labels, 0), std::invalid_argument);
  CHECK(model.trees() == 5);  // refused before anything changed
}
