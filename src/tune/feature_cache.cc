#include "src/tune/feature_cache.h"

#include <algorithm>

namespace cutune {

FeatureCache::FeatureCache(const cost_model::FeatureExtractor& extractor, size_t max_bytes)
    : extractor_(extractor),
      cols_(extractor.size()),
      max_rows_(std::max<size_t>(1, max_bytes / (sizeof(float) * std::max(1, cols_)))) {}

std::span<const float> FeatureCache::row(const Config& config) {
  uint64_t index = config.index();
  auto it = row_of_.find(index);
  if (it == row_of_.end()) {
    if (row_of_.size() >= max_rows_) {
      row_of_.clear();
      data_.clear();
      ++clears_;
    }
    size_t offset = data_.size();
    data_.resize(offset + cols_);
    extractor_.extract(config, std::span<float>(data_.data() + offset, cols_));
    it = row_of_.emplace(index, offset).first;
  }
  return {data_.data() + it->second, static_cast<size_t>(cols_)};
}

cost_model::FeatureMatrix FeatureCache::matrix(std::span<const Config> configs) {
  auto m = cost_model::FeatureMatrix::zeros(static_cast<int>(configs.size()), cols_);
  for (size_t r = 0; r < configs.size(); ++r) {
    std::span<const float> x = row(configs[r]);
    std::copy(x.begin(), x.end(), m.data.begin() + r * cols_);
  }
  return m;
}

}  // namespace cutune
