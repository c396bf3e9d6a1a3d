#include "src/replay/replay_measurer.h"

namespace cutune::replay {

ReplayMeasurer::ReplayMeasurer(const ReplayTask& task, bool noise, uint64_t seed)
    : task_(task), noise_(noise), rng_(seed) {}

ReplayMeasurement ReplayMeasurer::measure(const Config& config) {
  ++count_;
  ReplayMeasurement m;
  if (auto violated = task_.space().violation(config)) {
    m.error = "violates " + *violated;
    return m;
  }
  const KtEntry* entry = task_.find(config);
  if (entry == nullptr) {
    m.error = "not in cache";
    return m;
  }
  if (!entry->valid) {
    m.error = entry->error;
    return m;
  }
  m.valid = true;
  if (noise_ && !entry->times_ms.empty()) {
    std::uniform_int_distribution<size_t> pick(0, entry->times_ms.size() - 1);
    m.time_ms = entry->times_ms[pick(rng_)];
    m.times_ms = {m.time_ms};
  } else {
    m.time_ms = entry->time_ms;
    m.times_ms = entry->times_ms;
  }
  return m;
}

std::vector<ReplayMeasurement> ReplayMeasurer::measure(std::span<const Config> batch) {
  std::vector<ReplayMeasurement> out;
  out.reserve(batch.size());
  for (const Config& c : batch) out.push_back(measure(c));
  return out;
}

}  // namespace cutune::replay
