#pragma once
// Measures of how well a model orders candidates, and the deterministic split used to
// hold some measurements out when computing them.

#include <cstdint>
#include <span>
#include <vector>

namespace cutune::cost_model {

// The share of pairs (i, j) with truth[i] != truth[j] that pred orders the same way; a pair
// that pred ties counts one half. 1 is a perfect order, 0 the reversed one, 0.5 chance.
// Returns NaN when no pair has different truth. pred and truth have equal sizes.
// O(n^2) in the number of entries.
double pairwise_accuracy(std::span<const float> pred, std::span<const float> truth);

// The best true throughput among the k candidates with the highest predicted scores,
// divided by the best true throughput of all candidates: 1 means the model's top k hold the
// best configuration. Predicted ties are broken by the lower index. k >= 1; k larger than
// the number of candidates means all of them. Returns NaN when the best throughput is not
// positive (every candidate failed). Sizes are equal.
double average_peak_score_at_k(std::span<const float> pred_scores,
                               std::span<const float> true_throughput, int k);

// Row indices 0..n-1 split in two; each set is in increasing order.
struct TrainTestSplit {
  std::vector<int> train;
  std::vector<int> test;
};

// Puts round(n * test_fraction) randomly chosen rows in test and the rest in train. The
// choice depends only on (n, test_fraction, seed), the same on every platform.
// 0 <= test_fraction <= 1, n >= 0.
TrainTestSplit train_test_split(int n, double test_fraction, uint64_t seed);

// values[indices[0]], values[indices[1]], ...
std::vector<float> select(std::span<const float> values, std::span<const int> indices);

}  // namespace cutune::cost_model
