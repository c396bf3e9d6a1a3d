#pragma once
// What the model-based search knows: the measured configurations with their best throughput,
// everything observed or proposed, and how long the best has stalled. A plain value; the
// policy owns one and the trust region reads it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "src/space/config_space.h"

namespace cutune {

// Plans since the best last rose by more than a share `gain` of the best at the last plan
// that counted as progress. With gain 0, any rise counts.
struct StallCounter {
  double reference = 0;
  int stalled = 0;
  void update(double best, double gain);
};

class SearchState {
 public:
  // A measured configuration; a repeat keeps the larger throughput.
  void record(const Config& config, double throughput);
  // Proposed (or observed): never proposed again.
  void visit(uint64_t index) { visited_.insert(index); }
  bool visited(uint64_t index) const { return visited_.contains(index); }
  const std::unordered_set<uint64_t>& visited() const { return visited_; }

  size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  const std::vector<Config>& records() const { return records_; }
  const std::vector<double>& throughput() const { return throughput_; }
  const Config& config(size_t i) const { return records_[i]; }
  double throughput(size_t i) const { return throughput_[i]; }

  // The best throughput measured (0 when none).
  double best() const { return best_; }
  // The least throughput that counts as tied with the best (exact ties, up to rounding).
  double tie_floor() const { return best() * (1 - 1e-9); }
  // Record positions, best throughput first (ties in the order measured).
  std::vector<size_t> best_first() const;

  StallCounter trust;  // the trust region's: any rise counts
  StallCounter basin;  // the second basin's: a rise by BasinOptions::gain counts

 private:
  std::unordered_set<uint64_t> visited_;
  std::unordered_map<uint64_t, size_t> row_of_;  // index -> position in records_
  std::vector<Config> records_;
  std::vector<double> throughput_;
  double best_ = 0;
};

}  // namespace cutune
