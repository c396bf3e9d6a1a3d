#include "src/replay/t1_spec.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cutune::replay {

int T1Spec::parameter_position(std::string_view name) const {
  for (size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i].name == name) return static_cast<int>(i);
  return -1;
}

nlohmann::json parse_json_text(const std::string& text, const std::string& name) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts the characters read, the offending one included.
    const size_t at = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const size_t line_start = at == 0 ? 0 : text.rfind('\n', at - 1) + 1;  // npos + 1 == 0
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + at, '\n'));
    // nlohmann's "[json.exception.parse_error.101] parse error at line 2, column 5: syntax
    // error while parsing value - invalid literal; last read: '...'; expected ...": what
    // it says, without the prefix and the text it read (which may span lines).
    std::string why = e.what();
    if (size_t p = why.find(": "); why.starts_with("[json.exception") && p != std::string::npos)
      why.erase(0, p + 2);
    if (size_t last = why.find("; last read: '"); last != std::string::npos) {
      const size_t end = why.find("'; ", last + 14);
      why.erase(last, end == std::string::npos ? std::string::npos : end + 1 - last);
    }
    std::replace(why.begin(), why.end(), '\n', ' ');
    throw ConfigError(fmt::format("{} is not valid JSON: line {}, column {}: {}", name, line,
                                  at - line_start + 1, why));
  }
}

T1Spec parse_t1_spec(const nlohmann::json& j) {
  auto space_it = j.is_object() ? j.find("ConfigurationSpace") : j.end();
  if (!j.is_object() || space_it == j.end() || !space_it->is_object())
    throw ConfigError("T1 spec has no \"ConfigurationSpace\" object");
  const nlohmann::json& cs = *space_it;
  auto params_it = cs.find("TuningParameters");
  if (params_it == cs.end() || !params_it->is_array())
    throw ConfigError("T1 spec has no \"ConfigurationSpace.TuningParameters\" array");

  T1Spec spec;
  for (const auto& p : *params_it) {
    if (!p.is_object() || !p.contains("Name") || !p["Name"].is_string() || !p.contains("Values"))
      throw ConfigError("T1 tuning parameter needs a \"Name\" string and \"Values\"");
    T1Parameter param;
    param.name = p["Name"].get<std::string>();
    if (p.contains("Type") && p["Type"] != "int")
      throw ConfigError(fmt::format("T1 parameter '{}' has type {}; only \"int\" is supported",
                                    param.name, p["Type"].dump()));
    const auto& values = p["Values"];
    if (values.is_string()) {
      param.values = parse_values(values.get<std::string>());
    } else if (values.is_array() && std::all_of(values.begin(), values.end(), [](const auto& v) {
                 return v.is_number_integer();
               })) {
      param.values = values.get<std::vector<int64_t>>();
    } else {
      throw ConfigError(
          fmt::format("T1 parameter '{}' has Values that are not integers", param.name));
    }
    if (auto d = p.find("Default"); d != p.end()) {
      if (d->is_number_integer())
        param.default_value = d->get<int64_t>();
      else if (d->is_array() && d->size() == 1 && (*d)[0].is_number_integer())
        param.default_value = (*d)[0].get<int64_t>();
    }
    if (spec.parameter_position(param.name) >= 0)
      throw ConfigError(fmt::format("T1 parameter '{}' is listed twice", param.name));
    spec.parameters.push_back(std::move(param));
  }

  std::vector<std::string> names;
  for (const auto& p : spec.parameters) names.push_back(p.name);
  if (auto cond_it = cs.find("Conditions"); cond_it != cs.end()) {
    if (!cond_it->is_array()) throw ConfigError("T1 \"Conditions\" must be an array");
    for (size_t i = 0; i < cond_it->size(); ++i) {
      const auto& c = (*cond_it)[i];
      if (!c.is_object() || !c.contains("Expression") || !c["Expression"].is_string())
        throw ConfigError("T1 condition needs an \"Expression\" string");
      T1Condition cond;
      cond.expression = c["Expression"].get<std::string>();
      try {
        cond.parsed = std::make_shared<const PythonExpr>(PythonExpr::parse(cond.expression, names));
      } catch (const ExprError& e) {
        throw ExprError(
            fmt::format("ConfigurationSpace.Conditions[{}].Expression: {}", i, e.what()));
      }
      spec.conditions.push_back(std::move(cond));
    }
  }
  return spec;
}

T1Spec load_t1_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("cannot open T1 spec '{}'", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const nlohmann::json j = parse_json_text(buffer.str(), fmt::format("T1 spec '{}'", path));
  try {
    return parse_t1_spec(j);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", path, e.what()));
  }
}

void define_t1_space(const T1Spec& spec, ConfigSpace& space) {
  const int first = static_cast<int>(space.knobs().size());
  for (const auto& p : spec.parameters) space.define_choice(p.name, p.values);
  for (const auto& cond : spec.conditions) {
    // Only the positions the condition reads are filled; the rest stay zero.
    space.add_constraint(cond.expression, [expr = cond.parsed, first](const Config& c) {
      constexpr size_t kMaxInline = 64;
      std::array<int64_t, kMaxInline> inline_values{};
      std::vector<int64_t> heap_values;
      const size_t n = c.entities().size() - static_cast<size_t>(first);
      std::span<int64_t> values(inline_values.data(), std::min(n, kMaxInline));
      if (n > kMaxInline) {
        heap_values.resize(n);
        values = heap_values;
      }
      for (int position : expr->used_positions())
        values[static_cast<size_t>(position)] = c.get(first + position);
      return expr->test(values);
    });
  }
}

}  // namespace cutune::replay
