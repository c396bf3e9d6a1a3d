#pragma once
// A configuration space: the knobs a schedule template (or a replayed cache) declares, and the
// constraints between them. The space is the Cartesian product of the knobs' domains; a
// configuration is one entity of each knob, and its index is the mixed-radix number whose
// digits are the entity indices (first knob = least significant digit). Nothing is ever
// materialised beyond each knob's own domain, so spaces of 10^12 points are fine.
//
// Validity is separate from membership: every index in [0, size()) names a configuration, and
// `is_valid` says whether it satisfies all constraints. Search never proposes invalid points
// when it can tell; samplers draw uniformly among valid points (by rejection).

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "src/base/errors.h"

namespace cutune {

// Thrown for malformed user input about configurations (bad JSON, index out of range,
// unknown knob). The CLI turns it into a one-line message and exit code 2.
class ConfigError : public UserError {
 public:
  using UserError::UserError;
};

enum class KnobKind : uint8_t {
  split,   // an extent factored into `parts` ordered factors whose product is the extent
  choice,  // one of a listed set of integer values
  boolean  // 0 or 1
};

// One knob and its domain. Entities are numbered 0..cardinality()-1 in a fixed order.
class Knob {
 public:
  const std::string& name() const { return name_; }
  KnobKind kind() const { return kind_; }
  int64_t cardinality() const;

  // split: the factors of entity i (outermost first); choice/boolean: one value.
  const std::vector<int64_t>& split_factors(int64_t entity) const;
  int64_t value(int64_t entity) const;
  // The entity whose value (or factors) equals the argument, if any.
  std::optional<int64_t> find_value(int64_t value) const;
  std::optional<int64_t> find_factors(std::span<const int64_t> factors) const;

  // split only: the extent and number of parts.
  int64_t extent() const { return extent_; }
  int parts() const { return parts_; }
  // choice/boolean: the listed values.
  const std::vector<int64_t>& values() const { return values_; }

 private:
  friend class ConfigSpace;
  std::string name_;
  KnobKind kind_ = KnobKind::choice;
  int64_t extent_ = 0;
  int parts_ = 0;
  std::vector<std::vector<int64_t>> factors_;  // split
  std::vector<int64_t> values_;                // choice / boolean
  std::optional<int64_t> omitted_entity_;      // see define_choice's `if_omitted`
};

class ConfigSpace;

// One point of a space: an entity index per knob. Cheap to copy. Reading a knob by name is a
// linear scan over the (few) knobs; hot code reads by position.
class Config {
 public:
  Config() = default;
  Config(const ConfigSpace* space, std::vector<int32_t> entities);

  const ConfigSpace& space() const { return *space_; }
  uint64_t index() const;
  const std::vector<int32_t>& entities() const { return entities_; }

  // choice/boolean knobs: the chosen value.
  int64_t get(std::string_view knob) const;
  int64_t get(int knob_position) const;
  // split knobs: the chosen factors (outermost first).
  const std::vector<int64_t>& split(std::string_view knob) const;

  // {"index": 12, "knobs": {"tile_m": [2, 4, 8], "vec": 4, ...}}
  nlohmann::json to_json() const;
  // A short human form: "tile_m=[2,4,8] vec=4 ..."
  std::string to_string() const;

  friend bool operator==(const Config& a, const Config& b) {
    return a.space_ == b.space_ && a.entities_ == b.entities_;
  }

 private:
  friend class ConfigSpace;  // walks neighbours by editing one entity in place
  const ConfigSpace* space_ = nullptr;
  std::vector<int32_t> entities_;
};

class ConfigSpace {
 public:
  using Predicate = std::function<bool(const Config&)>;
  using Filter = std::function<bool(std::span<const int64_t> factors)>;

  // Declaring knobs. Names are unique; an empty domain is a ConfigError.
  void define_split(std::string name, int64_t extent, int parts, Filter filter = {});
  // `if_omitted`: the value a configuration given as JSON without this knob takes (a knob
  // added to a template later, so that configurations written before it still read);
  // without it, an omitted knob is an error.
  void define_choice(std::string name, std::vector<int64_t> values,
                     std::optional<int64_t> if_omitted = std::nullopt);
  void define_bool(std::string name);
  // A constraint between knobs, with a description shown when a configuration violates it.
  void add_constraint(std::string description, Predicate predicate);

  const std::vector<Knob>& knobs() const { return knobs_; }
  int knob_position(std::string_view name) const;  // ConfigError if unknown
  const Knob& knob(std::string_view name) const;

  // The exact number of points in the product space (ConfigError if it exceeds 2^63).
  uint64_t size() const;
  Config get(uint64_t index) const;  // ConfigError if index >= size()
  uint64_t index_of(const Config& config) const;

  bool is_valid(const Config& config) const;
  // The description of the first violated constraint, or nullopt if valid.
  std::optional<std::string> violation(const Config& config) const;

  // Uniform over valid configurations by rejection sampling. Where max_tries draws all miss
  // (a shape that rules out most of a large space: the wgmma GEMM at 67x45x33 keeps about one
  // configuration in a million), a repair instead: min-conflicts search from random draws (a
  // random knob set to the value that breaks the fewest constraints, a step at a time), whose
  // result is valid but not uniform. nullopt when that finds none either.
  std::optional<Config> sample_valid(std::mt19937_64& rng, int max_tries = 100000) const;
  // Configurations that differ from `config` in exactly one knob; valid ones only if asked.
  std::vector<Config> neighbours(const Config& config, bool valid_only = true) const;
  // One random valid neighbour (uniform knob among those with more than one entity, uniform
  // other entity): up to max_tries draws; nullopt when none of them was valid or no knob has a
  // second entity. The result is checked already (callers need not call is_valid again).
  std::optional<Config> random_neighbour(const Config& config, std::mt19937_64& rng,
                                         int max_tries = 64) const;

  // Exact count of valid configurations by enumeration; nullopt if size() > limit.
  std::optional<uint64_t> count_valid(uint64_t limit = 50'000'000) const;

  // Parses {"index": N} or {"knobs": {...}} (either suffices; both must agree) or a bare
  // index; every knob must be present in "knobs". ConfigError with a one-line reason.
  Config from_json(const nlohmann::json& j) const;
  nlohmann::json describe() const;  // knobs, their kinds, domains and cardinalities; size

 private:
  void add_knob(Knob knob);  // checks the name is new; updates size_
  int violations(const Config& config) const;  // constraints it breaks
  std::optional<Config> repair_sample(std::mt19937_64& rng) const;  // sample_valid's fallback

  std::vector<Knob> knobs_;
  // Per knob, its name's length and first 8 bytes (zero-padded): knob_position, called by
  // every constraint of every validity check, compares these before the names.
  std::vector<std::pair<size_t, uint64_t>> name_keys_;
  std::vector<std::pair<std::string, Predicate>> constraints_;
  uint64_t size_ = 1;            // product of the knobs' cardinalities, when it fits
  bool size_overflows_ = false;  // the product exceeds 2^63
};

}  // namespace cutune
