#pragma once
// A T1 search-space specification (the FAIR auto-tuning input format): the tuning parameters
// with their integer values, and the conditions between them as Python expressions.
//
// Only the part of T1 that defines the space is read: ConfigurationSpace.TuningParameters
// (Name, Type "int", Values as a Python list expression or a JSON array) and
// ConfigurationSpace.Conditions (Expression, Parameters). Everything else is ignored.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "src/replay/python_expr.h"
#include "src/space/config_space.h"

namespace cutune::replay {

struct T1Parameter {
  std::string name;
  std::vector<int64_t> values;           // in the order listed; no repeats
  std::optional<int64_t> default_value;  // "Default" (an int, or a list of one int), if given
};

struct T1Condition {
  std::string expression;                    // the text, as written
  std::shared_ptr<const PythonExpr> parsed;  // names bound to parameter positions
};

struct T1Spec {
  std::vector<T1Parameter> parameters;
  std::vector<T1Condition> conditions;

  int parameter_position(std::string_view name) const;  // -1 if absent
};

// `text` parsed as JSON; a ConfigError "<name> is not valid JSON: line L, column C: <what the
// parser expected>" (one line, the position counted from 1) when it is not.
nlohmann::json parse_json_text(const std::string& text, const std::string& name);

// ConfigError (one line) for a missing file, malformed JSON (with its line and column), a missing field, a non-int
// parameter type, or a condition that does not parse.
T1Spec load_t1_spec(const std::string& path);
T1Spec parse_t1_spec(const nlohmann::json& j);

// Adds one choice knob per parameter (in the spec's order) and one constraint per condition,
// described by its expression text. The constraints hold shared ownership of the parsed
// expressions, so the space outlives the spec.
void define_t1_space(const T1Spec& spec, ConfigSpace& space);

}  // namespace cutune::replay
