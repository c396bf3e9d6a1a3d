#include "src/replay/replay_measurer.h"

namespace cutune::replay {

namespace {

// SplitMix64's finaliser: a bijection of 64-bit words whose output bits each depend on every
// input bit, so that nearby seeds and indices give unrelated draws.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

size_t noise_draw(uint64_t seed, uint64_t config_index, uint64_t repetition, size_t repetitions) {
  const uint64_t h = mix(mix(mix(seed) ^ config_index) ^ repetition);
  // The high bits scaled to [0, repetitions): no modulo bias worth naming for a few hundred.
  return size_t((static_cast<unsigned __int128>(h) * repetitions) >> 64);
}

ReplayMeasurer::ReplayMeasurer(const ReplayTask& task, bool noise, uint64_t seed)
    : task_(task), noise_(noise), seed_(seed) {}

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
  m.compile_ms = entry->compile_ms.value_or(0);
  if (noise_ && !entry->times_ms.empty()) {
    const uint64_t repetition = answered_[config.index()]++;
    m.time_ms =
        entry->times_ms[noise_draw(seed_, config.index(), repetition, entry->times_ms.size())];
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
