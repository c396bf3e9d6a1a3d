#pragma once
// A tuning task answered from recorded measurements instead of a GPU: a configuration space
// plus the Kernel Tuner cache that measured it.
//
// Two ways to define the space:
//  - from the cache alone: one choice knob per tune parameter (tune_params_keys order, values
//    as listed in tune_params) and the single constraint "present in the cache", so the valid
//    configurations are exactly the cache's entries;
//  - from a T1 spec: the spec's parameters and conditions. A configuration the conditions allow
//    but the cache lacks is feasible in the space and measures as invalid ("not in cache").
// Entries are found by configuration index in a hash map: O(1).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/replay/kt_cache.h"
#include "src/replay/t1_spec.h"
#include "src/space/config_space.h"

namespace cutune::replay {

struct ReplaySummary {
  uint64_t points = 0;          // valid configurations of the space
  uint64_t measured = 0;        // of those, with a cache entry
  uint64_t measured_valid = 0;  // of those, with a numeric time
  double best_time_ms = 0;      // the optimum's mean time (0 when none is valid)
  std::optional<Config> best;   // the optimum
};

class ReplayTask {
 public:
  // Space from the cache alone.
  static ReplayTask from_cache(KtCache cache);
  // Space from a T1 spec; every cache key must be a spec parameter. Cache entries whose
  // values lie outside the spec's domains are dropped (counted by entries_outside_space()).
  static ReplayTask from_spec(KtCache cache, const T1Spec& spec);

  // The space's address is stable: the task owns it on the heap, so Configs stay valid
  // when the task is moved.
  const ConfigSpace& space() const { return *space_; }
  const KtCache& cache() const { return *cache_; }

  // The recorded entry for a configuration of space(), or nullptr when the cache has none.
  const KtEntry* find(const Config& config) const;
  const KtEntry* find(uint64_t index) const;

  ReplaySummary summary() const;
  // Mean times of the valid measured configurations of the space, ascending.
  std::vector<double> sorted_valid_times() const;
  uint64_t entries_outside_space() const { return outside_; }

 private:
  ReplayTask() = default;
  void index_entries(const std::vector<int>& knob_of_key);

  std::unique_ptr<ConfigSpace> space_;
  std::shared_ptr<const KtCache> cache_;
  // Configuration index -> entry position in cache_->entries. Shared with the space's
  // "present in the cache" constraint.
  std::shared_ptr<std::unordered_map<uint64_t, uint32_t>> by_index_;
  uint64_t outside_ = 0;
};

}  // namespace cutune::replay
