#include "cost_model/rank_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace cutune::cost_model {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_same_size(const char* who, size_t a, size_t b) {
  if (a != b) throw std::invalid_argument(fmt::format("{}: sizes differ ({} vs {})", who, a, b));
}

// SplitMix64: fixed arithmetic, so the split does not depend on the standard library's
// distributions, which differ between implementations.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

double pairwise_accuracy(std::span<const float> pred, std::span<const float> truth) {
  check_same_size("pairwise_accuracy", pred.size(), truth.size());
  double agree = 0;
  uint64_t pairs = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    for (size_t j = i + 1; j < truth.size(); ++j) {
      if (truth[i] == truth[j]) continue;
      ++pairs;
      if (pred[i] == pred[j]) {
        agree += 0.5;
      } else if ((pred[i] < pred[j]) == (truth[i] < truth[j])) {
        agree += 1;
      }
    }
  }
  return pairs == 0 ? kNaN : agree / static_cast<double>(pairs);
}

double average_peak_score_at_k(std::span<const float> pred_scores,
                               std::span<const float> true_throughput, int k) {
  check_same_size("average_peak_score_at_k", pred_scores.size(), true_throughput.size());
  if (k < 1) throw std::invalid_argument(fmt::format("average_peak_score_at_k: k = {} < 1", k));
  if (true_throughput.empty()) return kNaN;
  float best = *std::max_element(true_throughput.begin(), true_throughput.end());
  if (!(best > 0)) return kNaN;

  std::vector<int> order(pred_scores.size());
  std::iota(order.begin(), order.end(), 0);
  size_t top = std::min(order.size(), static_cast<size_t>(k));
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(top), order.end(),
                    [&](int a, int b) {
                      if (pred_scores[a] != pred_scores[b]) return pred_scores[a] > pred_scores[b];
                      return a < b;
                    });
  float best_in_top = 0;
  for (size_t i = 0; i < top; ++i) best_in_top = std::max(best_in_top, true_throughput[order[i]]);
  return static_cast<double>(best_in_top) / static_cast<double>(best);
}

TrainTestSplit train_test_split(int n, double test_fraction, uint64_t seed) {
  if (n < 0) throw std::invalid_argument(fmt::format("train_test_split: n = {} < 0", n));
  if (!(test_fraction >= 0 && test_fraction <= 1)) {
    throw std::invalid_argument(
        fmt::format("train_test_split: test_fraction {} is not in [0, 1]", test_fraction));
  }
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  uint64_t state = seed;
  for (int i = n - 1; i > 0; --i) {
    // The modulo bias is below 2^-32 for any n we will see.
    int j = static_cast<int>(splitmix64(state) % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  auto test_count = static_cast<ptrdiff_t>(std::llround(n * test_fraction));
  TrainTestSplit split;
  split.test.assign(order.begin(), order.begin() + test_count);
  split.train.assign(order.begin() + test_count, order.end());
  std::sort(split.test.begin(), split.test.end());
  std::sort(split.train.begin(), split.train.end());
  return split;
}

std::vector<float> select(std::span<const float> values, std::span<const int> indices) {
  std::vector<float> out;
  out.reserve(indices.size());
  for (int i : indices) {
    if (i < 0 || static_cast<size_t>(i) >= values.size()) {
      throw std::invalid_argument(fmt::format("select: index {} out of [0, {})", i, values.size()));
    }
    out.push_back(values[static_cast<size_t>(i)]);
  }
  return out;
}

}  // namespace cutune::cost_model
