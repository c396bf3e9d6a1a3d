#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "cost_model/rank_metrics.h"

using namespace cutune::cost_model;

TEST_CASE("pairwise_accuracy of perfect, reversed and tied predictions", "[rank_metrics]") {
  std::vector<float> truth{1, 2, 3, 4};
  CHECK(pairwise_accuracy(std::vector<float>{10, 20, 30, 40}, truth) == 1.0);
  CHECK(pairwise_accuracy(std::vector<float>{4, 3, 2, 1}, truth) == 0.0);
  CHECK(pairwise_accuracy(std::vector<float>{7, 7, 7, 7}, truth) == 0.5);
  // Pairs: (0,1) right, (0,2) right, (0,3) wrong, (1,2) tie, (1,3) wrong, (2,3) wrong.
  CHECK(pairwise_accuracy(std::vector<float>{1, 2, 2, 0}, truth) == Approx(2.5 / 6));
}

TEST_CASE("pairwise_accuracy skips pairs with equal truth", "[rank_metrics]") {
  // Only (0,2) and (1,2) count; pred orders both correctly, the tie (0,1) is ignored.
  CHECK(pairwise_accuracy(std::vector<float>{5, 1, 9}, std::vector<float>{0, 0, 1}) == 1.0);
  CHECK(std::isnan(pairwise_accuracy(std::vector<float>{1, 2}, std::vector<float>{3, 3})));
  CHECK_THROWS_AS(pairwise_accuracy(std::vector<float>{1}, std::vector<float>{1, 2}),
                  std::invalid_argument);
}

TEST_CASE("average_peak_score_at_k on a hand-computed example", "[rank_metrics]") {
  std::vector<float> throughput{0.2f, 1.0f, 0.5f, 0.8f};
  std::vector<float> scores{4, 1, 3, 2};  // model's order: 0, 2, 3, 1
  CHECK(average_peak_score_at_k(scores, throughput, 1) == Approx(0.2));
  CHECK(average_peak_score_at_k(scores, throughput, 2) == Approx(0.5));
  CHECK(average_peak_score_at_k(scores, throughput, 3) == Approx(0.8));
  CHECK(average_peak_score_at_k(scores, throughput, 4) == Approx(1.0));
  CHECK(average_peak_score_at_k(scores, throughput, 100) == Approx(1.0));
  // Ties in the scores go to the lower index.
  CHECK(average_peak_score_at_k(std::vector<float>{1, 1, 1, 1}, throughput, 1) == Approx(0.2));
  CHECK(std::isnan(average_peak_score_at_k(scores, std::vector<float>{0, 0, 0, 0}, 2)));
  CHECK_THROWS_AS(average_peak_score_at_k(scores, throughput, 0), std::invalid_argument);
}

TEST_CASE("train_test_split is a deterministic partition", "[rank_metrics]") {
  TrainTestSplit a = train_test_split(100, 0.25, 7);
  TrainTestSplit b = train_test_split(100, 0.25, 7);
  TrainTestSplit c = train_test_split(100, 0.25, 8);
  CHECK(a.test.size() == 25);
  CHECK(a.train.size() == 75);
  CHECK(a.test == b.test);
  CHECK(a.train == b.train);
  CHECK(a.test != c.test);

  std::vector<int> seen(100, 0);
  for (int i : a.train) ++seen[i];
  for (int i : a.test) ++seen[i];
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  CHECK(std::is_sorted(a.test.begin(), a.test.end()));

  CHECK(train_test_split(0, 0.5, 1).train.empty());
  CHECK(train_test_split(10, 0.0, 1).train.size() == 10);
  CHECK(train_test_split(10, 1.0, 1).test.size() == 10);
  CHECK_THROWS_AS(train_test_split(10, 1.5, 1), std::invalid_argument);
}

TEST_CASE("select picks values by index", "[rank_metrics]") {
  std::vector<float> values{10, 11, 12};
  CHECK(select(values, std::vector<int>{2, 0}) == std::vector<float>{12, 10});
  CHECK_THROWS_AS(select(values, std::vector<int>{3}), std::invalid_argument);
}
