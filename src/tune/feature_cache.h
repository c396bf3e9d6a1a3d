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
// distinct configuration seen.
class FeatureCache {
 public:
  explicit FeatureCache(const cost_model::FeatureExtractor& extractor);

  // The rows of `configs`, in order.
  cost_model::FeatureMatrix matrix(std::span<const Config> configs);
  std::span<const float> row(const Config& config);

  const cost_model::FeatureExtractor& extractor() const { return extractor_; }
  size_t cached() const { return row_of_.size(); }

 private:
  const cost_model::FeatureExtractor& extractor_;
  int cols_;
  std::unordered_map<uint64_t, size_t> row_of_;  // index -> first float in data_
  std::vector<float> data_;
};

}  // namespace cutune
