#include "src/tune/model/search_state.h"

#include <algorithm>
#include <numeric>

namespace cutune {

void StallCounter::update(double best, double gain) {
  if (best > reference * (1 + std::max(1e-9, gain))) {
    stalled = 0;
    reference = best;
  } else {
    ++stalled;
  }
}

void SearchState::record(const Config& config, double throughput) {
  visited_.insert(config.index());
  auto [it, fresh] = row_of_.emplace(config.index(), records_.size());
  if (fresh) {
    records_.push_back(config);
    throughput_.push_back(throughput);
  } else {
    throughput_[it->second] = std::max(throughput_[it->second], throughput);
  }
  best_ = std::max(best_, throughput);
}

std::vector<size_t> SearchState::best_first() const {
  std::vector<size_t> order(records_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return throughput_[a] > throughput_[b]; });
  return order;
}

}  // namespace cutune
