#include "src/replay/replay_space.h"

#include <algorithm>

#include <fmt/format.h>

namespace cutune::replay {

ReplayTask ReplayTask::from_cache(KtCache cache) {
  ReplayTask task;
  task.space_ = std::make_unique<ConfigSpace>();
  for (size_t i = 0; i < cache.tune_params_keys.size(); ++i)
    task.space_->define_choice(cache.tune_params_keys[i], cache.tune_params[i]);
  task.cache_ = std::make_shared<const KtCache>(std::move(cache));
  std::vector<int> knob_of_key(task.cache_->tune_params_keys.size());
  for (size_t i = 0; i < knob_of_key.size(); ++i) knob_of_key[i] = static_cast<int>(i);
  task.index_entries(knob_of_key);
  task.space_->add_constraint("present in the cache", [map = task.by_index_](const Config& c) {
    return map->count(c.index()) != 0;
  });
  return task;
}

ReplayTask ReplayTask::from_spec(KtCache cache, const T1Spec& spec) {
  ReplayTask task;
  task.space_ = std::make_unique<ConfigSpace>();
  define_t1_space(spec, *task.space_);
  std::vector<int> knob_of_key;
  for (const auto& key : cache.tune_params_keys) {
    int position = spec.parameter_position(key);
    if (position < 0)
      throw ConfigError(fmt::format("cache parameter '{}' is not a parameter of the T1 spec", key));
    knob_of_key.push_back(position);
  }
  if (knob_of_key.size() != spec.parameters.size())
    throw ConfigError(fmt::format("the T1 spec has {} parameters, the cache {}",
                                  spec.parameters.size(), knob_of_key.size()));
  task.cache_ = std::make_shared<const KtCache>(std::move(cache));
  task.index_entries(knob_of_key);
  return task;
}

void ReplayTask::index_entries(const std::vector<int>& knob_of_key) {
  by_index_ = std::make_shared<std::unordered_map<uint64_t, uint32_t>>();
  by_index_->reserve(cache_->entries.size());
  std::vector<int32_t> entities(space_->knobs().size());
  for (size_t e = 0; e < cache_->entries.size(); ++e) {
    const KtEntry& entry = cache_->entries[e];
    bool inside = true;
    for (size_t k = 0; k < knob_of_key.size(); ++k) {
      const size_t knob = static_cast<size_t>(knob_of_key[k]);
      auto entity = space_->knobs()[knob].find_value(entry.values[k]);
      if (!entity) {
        inside = false;
        break;
      }
      entities[knob] = static_cast<int32_t>(*entity);
    }
    if (!inside) {
      ++outside_;
      continue;
    }
    Config config(space_.get(), entities);
    by_index_->emplace(config.index(), static_cast<uint32_t>(e));
  }
}

const KtEntry* ReplayTask::find(uint64_t index) const {
  auto it = by_index_->find(index);
  return it == by_index_->end() ? nullptr : &cache_->entries[it->second];
}

const KtEntry* ReplayTask::find(const Config& config) const { return find(config.index()); }

ReplaySummary ReplayTask::summary() const {
  ReplaySummary s;
  if (auto n = space_->count_valid()) s.points = *n;
  for (const auto& [index, position] : *by_index_) {
    Config config = space_->get(index);
    if (!space_->is_valid(config)) continue;
    ++s.measured;
    const KtEntry& entry = cache_->entries[position];
    if (!entry.valid) continue;
    ++s.measured_valid;
    if (!s.best || entry.time_ms < s.best_time_ms ||
        (entry.time_ms == s.best_time_ms && index < s.best->index())) {
      s.best_time_ms = entry.time_ms;
      s.best = std::move(config);
    }
  }
  return s;
}

std::vector<double> ReplayTask::sorted_valid_times() const {
  std::vector<double> times;
  for (const auto& [index, position] : *by_index_) {
    const KtEntry& entry = cache_->entries[position];
    if (entry.valid && space_->is_valid(space_->get(index))) times.push_back(entry.time_ms);
  }
  std::sort(times.begin(), times.end());
  return times;
}

}  // namespace cutune::replay
