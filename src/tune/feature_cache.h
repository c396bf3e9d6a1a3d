#pragma once
// Feature vectors of configurations, computed once per configuration index and kept: one
// annealing round asks for the same neighbours many times, and every refit asks again for
// every measured configuration.

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "cost_model/features.h"
#include "cost_model/rank_model.h"

namespace cutune {

// Not thread-safe. The extractor must outlive the cache. Memory: size() floats per
// distinct configuration seen, up to max_bytes; a row that would pass it empties the cache
// first (rows are recomputed as asked: the same values, at the extractor's cost). IR
// features of a large space take about 70 MB a round of annealing (40k new configurations
// of 462 floats), so an unbounded cache would grow by that every round of a long run.
class FeatureCache {
 public:
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;

  explicit FeatureCache(const cost_model::FeatureExtractor& extractor,
                        size_t max_bytes = kDefaultMaxBytes);

  // The rows of `configs`, in order.
  cost_model::FeatureMatrix matrix(std::span<const Config> configs);
  std::span<const float> row(const Config& config);

  const cost_model::FeatureExtractor& extractor() const { return extractor_; }
  size_t cached() const { return row_of_.size(); }
  int clears() const { return clears_; }  // times the cache emptied itself at max_bytes

 private:
  const cost_model::FeatureExtractor& extractor_;
  int cols_;
  size_t max_rows_;
  int clears_ = 0;
  std::unordered_map<uint64_t, size_t> row_of_;  // index -> first float in data_
  std::vector<float> data_;
};

}  // namespace cutune
