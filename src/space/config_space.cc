#include "src/space/config_space.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cutune {
namespace {

constexpr uint64_t kMaxSize = uint64_t{1} << 63;

[[noreturn]] void internal_error(const char* what) {
  std::fprintf(stderr, "cutune internal error (config_space): %s\n", what);
  std::abort();
}

void check(bool condition, const char* what) {
  if (!condition) internal_error(what);
}

void enumerate_factorisations(int64_t remaining, int parts_left, std::vector<int64_t>& prefix,
                              const ConfigSpace::Filter& filter,
                              std::vector<std::vector<int64_t>>& out) {
  if (parts_left == 1) {
    prefix.push_back(remaining);
    if (!filter || filter(prefix)) out.push_back(prefix);
    prefix.pop_back();
    return;
  }
  for (int64_t d = 1; d <= remaining; ++d) {
    if (remaining % d != 0) continue;
    prefix.push_back(d);
    enumerate_factorisations(remaining / d, parts_left - 1, prefix, filter, out);
    prefix.pop_back();
  }
}

const char* kind_name(KnobKind kind) {
  switch (kind) {
    case KnobKind::split:
      return "split";
    case KnobKind::choice:
      return "choice";
    case KnobKind::boolean:
      return "bool";
  }
  return "?";
}

}  // namespace

int64_t Knob::cardinality() const {
  return kind_ == KnobKind::split ? static_cast<int64_t>(factors_.size())
                                  : static_cast<int64_t>(values_.size());
}

const std::vector<int64_t>& Knob::split_factors(int64_t entity) const {
  check(kind_ == KnobKind::split, "split_factors on a knob that is not a split");
  check(entity >= 0 && entity < cardinality(), "split entity out of range");
  return factors_[static_cast<size_t>(entity)];
}

int64_t Knob::value(int64_t entity) const {
  check(kind_ != KnobKind::split, "value on a split knob");
  check(entity >= 0 && entity < cardinality(), "entity out of range");
  return values_[static_cast<size_t>(entity)];
}

std::optional<int64_t> Knob::find_value(int64_t value) const {
  if (kind_ == KnobKind::split) return std::nullopt;
  auto it = std::find(values_.begin(), values_.end(), value);
  if (it == values_.end()) return std::nullopt;
  return it - values_.begin();
}

std::optional<int64_t> Knob::find_factors(std::span<const int64_t> factors) const {
  if (kind_ != KnobKind::split) return std::nullopt;
  // factors_ is in lexicographic order by construction.
  auto it = std::lower_bound(factors_.begin(), factors_.end(), factors,
                             [](const std::vector<int64_t>& a, std::span<const int64_t> b) {
                               return std::lexicographical_compare(a.begin(), a.end(), b.begin(),
                                                                   b.end());
                             });
  if (it == factors_.end() || !std::equal(it->begin(), it->end(), factors.begin(), factors.end()))
    return std::nullopt;
  return it - factors_.begin();
}

Config::Config(const ConfigSpace* space, std::vector<int32_t> entities)
    : space_(space), entities_(std::move(entities)) {
  check(space_ != nullptr, "Config without a space");
  check(entities_.size() == space_->knobs().size(), "Config entity count differs from knobs");
}

uint64_t Config::index() const { return space_->index_of(*this); }

int64_t Config::get(std::string_view knob) const { return get(space_->knob_position(knob)); }

int64_t Config::get(int knob_position) const {
  return space_->knobs()[static_cast<size_t>(knob_position)].value(entities_[knob_position]);
}

const std::vector<int64_t>& Config::split(std::string_view knob) const {
  int position = space_->knob_position(knob);
  const Knob& k = space_->knobs()[static_cast<size_t>(position)];
  if (k.kind() != KnobKind::split) throw ConfigError(fmt::format("knob '{}' is not a split", knob));
  return k.split_factors(entities_[static_cast<size_t>(position)]);
}

nlohmann::json Config::to_json() const {
  nlohmann::json knobs = nlohmann::json::object();
  const auto& ks = space_->knobs();
  for (size_t i = 0; i < ks.size(); ++i) {
    const Knob& k = ks[i];
    switch (k.kind()) {
      case KnobKind::split:
        knobs[k.name()] = k.split_factors(entities_[i]);
        break;
      case KnobKind::choice:
        knobs[k.name()] = k.value(entities_[i]);
        break;
      case KnobKind::boolean:
        knobs[k.name()] = k.value(entities_[i]) != 0;
        break;
    }
  }
  return {{"index", index()}, {"knobs", std::move(knobs)}};
}

std::string Config::to_string() const {
  std::string out;
  const auto& ks = space_->knobs();
  for (size_t i = 0; i < ks.size(); ++i) {
    const Knob& k = ks[i];
    if (i > 0) out += ' ';
    if (k.kind() == KnobKind::split)
      out += fmt::format("{}=[{}]", k.name(), fmt::join(k.split_factors(entities_[i]), ","));
    else
      out += fmt::format("{}={}", k.name(), k.value(entities_[i]));
  }
  return out;
}

void ConfigSpace::define_split(std::string name, int64_t extent, int parts, Filter filter) {
  if (extent < 1) throw ConfigError(fmt::format("split '{}': extent {} < 1", name, extent));
  if (parts < 1) throw ConfigError(fmt::format("split '{}': parts {} < 1", name, parts));
  Knob knob;
  knob.kind_ = KnobKind::split;
  knob.extent_ = extent;
  knob.parts_ = parts;
  std::vector<int64_t> prefix;
  enumerate_factorisations(extent, parts, prefix, filter, knob.factors_);
  knob.name_ = std::move(name);
  if (knob.factors_.empty())
    throw ConfigError(fmt::format("split '{}': the filter leaves no factorisation", knob.name_));
  add_knob(std::move(knob));
}

void ConfigSpace::define_choice(std::string name, std::vector<int64_t> values,
                                std::optional<int64_t> if_omitted) {
  if (values.empty()) throw ConfigError(fmt::format("choice '{}' has no values", name));
  // Sorted, not pairwise: a user's spec may list a million values.
  std::vector<int64_t> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
    throw ConfigError(fmt::format("choice '{}' lists {} twice", name, *twice));
  Knob knob;
  knob.name_ = std::move(name);
  knob.kind_ = KnobKind::choice;
  knob.values_ = std::move(values);
  if (if_omitted) {
    knob.omitted_entity_ = knob.find_value(*if_omitted);
    if (!knob.omitted_entity_)
      throw ConfigError(
          fmt::format("choice '{}' does not list its default {}", knob.name_, *if_omitted));
  }
  add_knob(std::move(knob));
}

void ConfigSpace::define_bool(std::string name) {
  Knob knob;
  knob.name_ = std::move(name);
  knob.kind_ = KnobKind::boolean;
  knob.values_ = {0, 1};
  add_knob(std::move(knob));
}

namespace {

uint64_t name_prefix(std::string_view name) {
  uint64_t out = 0;
  if (!name.empty()) std::memcpy(&out, name.data(), std::min<size_t>(name.size(), 8));
  return out;
}

}  // namespace

void ConfigSpace::add_knob(Knob knob) {
  for (const Knob& k : knobs_)
    if (k.name_ == knob.name_) throw ConfigError(fmt::format("knob '{}' defined twice", k.name_));
  if (knob.cardinality() > std::numeric_limits<int32_t>::max())
    throw ConfigError(fmt::format("knob '{}' has more than 2^31 entities", knob.name_));
  auto c = static_cast<uint64_t>(knob.cardinality());
  name_keys_.emplace_back(knob.name_.size(), name_prefix(knob.name_));
  knobs_.push_back(std::move(knob));
  if (size_overflows_ || size_ > kMaxSize / c)
    size_overflows_ = true;
  else
    size_ *= c;
}

void ConfigSpace::add_constraint(std::string description, Predicate predicate) {
  check(static_cast<bool>(predicate), "add_constraint with an empty predicate");
  constraints_.emplace_back(std::move(description), std::move(predicate));
}

int ConfigSpace::knob_position(std::string_view name) const {
  const uint64_t prefix = name_prefix(name);
  for (size_t i = 0; i < knobs_.size(); ++i) {
    if (name_keys_[i].first == name.size() && name_keys_[i].second == prefix &&
        (name.size() <= 8 || knobs_[i].name_ == name))
      return static_cast<int>(i);
  }
  throw ConfigError(fmt::format("unknown knob '{}'", name));
}

const Knob& ConfigSpace::knob(std::string_view name) const {
  return knobs_[static_cast<size_t>(knob_position(name))];
}

uint64_t ConfigSpace::size() const {
  if (size_overflows_) throw ConfigError("configuration space has more than 2^63 points");
  return size_;
}

Config ConfigSpace::get(uint64_t index) const {
  if (index >= size())
    throw ConfigError(fmt::format("configuration index {} out of range [0, {})", index, size_));
  std::vector<int32_t> entities(knobs_.size());
  for (size_t i = 0; i < knobs_.size(); ++i) {
    auto c = static_cast<uint64_t>(knobs_[i].cardinality());
    entities[i] = static_cast<int32_t>(index % c);
    index /= c;
  }
  return Config(this, std::move(entities));
}

uint64_t ConfigSpace::index_of(const Config& config) const {
  check(&config.space() == this, "index_of a configuration from another space");
  uint64_t index = 0;
  uint64_t stride = 1;
  const auto& e = config.entities();
  for (size_t i = 0; i < knobs_.size(); ++i) {
    index += static_cast<uint64_t>(e[i]) * stride;
    stride *= static_cast<uint64_t>(knobs_[i].cardinality());
  }
  return index;
}

bool ConfigSpace::is_valid(const Config& config) const {
  for (const auto& [description, predicate] : constraints_)
    if (!predicate(config)) return false;
  return true;
}

std::optional<std::string> ConfigSpace::violation(const Config& config) const {
  for (const auto& [description, predicate] : constraints_)
    if (!predicate(config)) return description;
  return std::nullopt;
}

std::optional<Config> ConfigSpace::sample_valid(std::mt19937_64& rng, int max_tries) const {
  Config config(this, std::vector<int32_t>(knobs_.size()));
  auto& entities = config.entities_;
  for (int attempt = 0; attempt < max_tries; ++attempt) {
    // Independent uniform entities per knob is a uniform point of the product space.
    for (size_t i = 0; i < knobs_.size(); ++i) {
      std::uniform_int_distribution<int32_t> pick(
          0, static_cast<int32_t>(knobs_[i].cardinality() - 1));
      entities[i] = pick(rng);
    }
    if (is_valid(config)) return config;
  }
  return repair_sample(rng);
}

int ConfigSpace::violations(const Config& config) const {
  int n = 0;
  for (const auto& [description, predicate] : constraints_) n += !predicate(config);
  return n;
}

std::optional<Config> ConfigSpace::repair_sample(std::mt19937_64& rng) const {
  constexpr int kRestarts = 64, kSteps = 256;
  Config config(this, std::vector<int32_t>(knobs_.size()));
  auto& entities = config.entities_;
  std::vector<int32_t> best;
  for (int restart = 0; restart < kRestarts && !knobs_.empty(); ++restart) {
    for (size_t i = 0; i < knobs_.size(); ++i) {
      entities[i] = std::uniform_int_distribution<int32_t>(
          0, static_cast<int32_t>(knobs_[i].cardinality() - 1))(rng);
    }
    for (int step = 0; step < kSteps; ++step) {
      if (violations(config) == 0) return config;
      const size_t k = std::uniform_int_distribution<size_t>(0, knobs_.size() - 1)(rng);
      // The knob's values that break the fewest constraints; one of them at random (sideways
      // moves let the search cross plateaus).
      int fewest = INT_MAX;
      best.clear();
      for (int32_t e = 0; e < static_cast<int32_t>(knobs_[k].cardinality()); ++e) {
        entities[k] = e;
        const int v = violations(config);
        if (v < fewest) {
          fewest = v;
          best.clear();
        }
        if (v == fewest) best.push_back(e);
      }
      entities[k] = best[std::uniform_int_distribution<size_t>(0, best.size() - 1)(rng)];
    }
    if (violations(config) == 0) return config;
  }
  return std::nullopt;
}

std::vector<Config> ConfigSpace::neighbours(const Config& config, bool valid_only) const {
  check(&config.space() == this, "neighbours of a configuration from another space");
  std::vector<Config> out;
  Config probe = config;
  auto& entities = probe.entities_;
  for (size_t i = 0; i < knobs_.size(); ++i) {
    const int32_t original = entities[i];
    const auto card = static_cast<int32_t>(knobs_[i].cardinality());
    for (int32_t e = 0; e < card; ++e) {
      if (e == original) continue;
      entities[i] = e;
      if (!valid_only || is_valid(probe)) out.push_back(probe);
    }
    entities[i] = original;
  }
  return out;
}

std::optional<Config> ConfigSpace::random_neighbour(const Config& config, std::mt19937_64& rng,
                                                    int max_tries) const {
  check(&config.space() == this, "random_neighbour of a configuration from another space");
  // Knobs with a single entity cannot move; skip them without allocating a list.
  int movable = 0;
  for (const Knob& k : knobs_) movable += k.cardinality() > 1 ? 1 : 0;
  if (movable == 0) return std::nullopt;

  Config probe = config;
  auto& entities = probe.entities_;
  std::uniform_int_distribution<int> pick_knob(0, movable - 1);
  size_t last_knob = 0;
  for (int attempt = 0; attempt < std::max(1, max_tries); ++attempt) {
    entities[last_knob] = config.entities()[last_knob];
    int nth = pick_knob(rng);
    size_t i = 0;
    for (;; ++i) {
      if (knobs_[i].cardinality() > 1 && nth-- == 0) break;
    }
    const auto card = static_cast<int32_t>(knobs_[i].cardinality());
    std::uniform_int_distribution<int32_t> pick_entity(0, card - 2);
    int32_t e = pick_entity(rng);
    if (e >= config.entities()[i]) ++e;
    entities[i] = e;
    last_knob = i;
    if (is_valid(probe)) return probe;
  }
  return std::nullopt;
}

std::optional<uint64_t> ConfigSpace::count_valid(uint64_t limit) const {
  if (size_overflows_ || size_ > limit) return std::nullopt;
  Config probe(this, std::vector<int32_t>(knobs_.size(), 0));
  auto& entities = probe.entities_;
  uint64_t count = 0;
  for (uint64_t n = 0; n < size_; ++n) {
    if (is_valid(probe)) ++count;
    for (size_t i = 0; i < knobs_.size(); ++i) {
      if (++entities[i] < knobs_[i].cardinality()) break;
      entities[i] = 0;
    }
  }
  return count;
}

Config ConfigSpace::from_json(const nlohmann::json& j) const {
  std::optional<uint64_t> index;
  const nlohmann::json* knobs_json = nullptr;
  if (j.is_number_unsigned()) {
    index = j.get<uint64_t>();
  } else if (j.is_object()) {
    if (auto it = j.find("index"); it != j.end()) {
      if (!it->is_number_unsigned())
        throw ConfigError(fmt::format(
            "configuration \"index\" must be a non-negative integer, got {}", it->dump()));
      index = it->get<uint64_t>();
    }
    if (auto it = j.find("knobs"); it != j.end()) {
      if (!it->is_object())
        throw ConfigError(
            fmt::format("configuration \"knobs\" must be an object, got {}", it->type_name()));
      knobs_json = &*it;
    }
    if (!index && !knobs_json)
      throw ConfigError("configuration needs an \"index\" or a \"knobs\" object");
  } else {
    throw ConfigError(fmt::format("configuration must be an object or a non-negative index, got {}",
                                  j.type_name()));
  }

  if (index && *index >= size())
    throw ConfigError(fmt::format("configuration index {} out of range [0, {})", *index, size_));
  if (!knobs_json) return get(*index);

  for (const auto& [name, value] : knobs_json->items()) {
    bool known =
        std::any_of(knobs_.begin(), knobs_.end(), [&](const Knob& k) { return k.name_ == name; });
    if (!known) throw ConfigError(fmt::format("unknown knob '{}' in configuration", name));
  }
  std::vector<int32_t> entities(knobs_.size());
  for (size_t i = 0; i < knobs_.size(); ++i) {
    const Knob& k = knobs_[i];
    auto it = knobs_json->find(k.name_);
    if (it == knobs_json->end() && k.omitted_entity_) {
      entities[i] = static_cast<int32_t>(*k.omitted_entity_);
      continue;
    }
    if (it == knobs_json->end())
      throw ConfigError(fmt::format("configuration is missing knob '{}'", k.name_));
    std::optional<int64_t> entity;
    if (k.kind_ == KnobKind::split) {
      if (it->is_array() && std::all_of(it->begin(), it->end(),
                                        [](const auto& v) { return v.is_number_integer(); })) {
        auto factors = it->get<std::vector<int64_t>>();
        entity = k.find_factors(factors);
      }
    } else if (it->is_number_integer()) {
      entity = k.find_value(it->get<int64_t>());
    } else if (it->is_boolean() && k.kind_ == KnobKind::boolean) {
      entity = k.find_value(it->get<bool>() ? 1 : 0);
    }
    if (!entity)
      throw ConfigError(
          fmt::format("value {} of knob '{}' is not in its domain", it->dump(), k.name_));
    entities[i] = static_cast<int32_t>(*entity);
  }
  Config config(this, std::move(entities));
  if (index && *index != config.index())
    throw ConfigError(fmt::format("configuration index {} disagrees with its knobs (index {})",
                                  *index, config.index()));
  return config;
}

nlohmann::json ConfigSpace::describe() const {
  nlohmann::json knobs = nlohmann::json::array();
  for (const Knob& k : knobs_) {
    nlohmann::json d = {
        {"name", k.name_}, {"kind", kind_name(k.kind_)}, {"cardinality", k.cardinality()}};
    if (k.kind_ == KnobKind::split) {
      d["extent"] = k.extent_;
      d["parts"] = k.parts_;
    } else {
      d["values"] = k.values_;
    }
    knobs.push_back(std::move(d));
  }
  nlohmann::json constraints = nlohmann::json::array();
  for (const auto& c : constraints_) constraints.push_back(c.first);
  nlohmann::json out = {{"knobs", std::move(knobs)}, {"constraints", std::move(constraints)}};
  if (size_overflows_)
    out["size"] = nullptr;
  else
    out["size"] = size_;
  return out;
}

}  // namespace cutune
