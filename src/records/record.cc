#include "src/records/record.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cutune {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& reason) { throw RecordError("record: " + reason); }

void check_internal(bool condition, std::string_view what) {
  if (!condition) throw std::logic_error(fmt::format("internal error: encode_record: {}", what));
}

std::string dotted(std::string_view parent, std::string_view name) {
  return parent.empty() ? std::string(name) : fmt::format("{}.{}", parent, name);
}

std::string_view type_name(const json& value) {
  if (value.is_number_integer()) return "integer";
  return value.type_name();
}

// Reads one field of a JSON object by name, with the dotted path in every error message.
class Fields {
 public:
  Fields(const json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_object()) {
      fail(path_.empty()
               ? fmt::format("expected a JSON object, got {}", type_name(object_))
               : fmt::format("field '{}' must be an object, got {}", path_, type_name(object_)));
    }
  }

  const json* find(std::string_view name) const {
    auto it = object_.find(name);
    return it == object_.end() ? nullptr : &*it;
  }

  const json& required(std::string_view name) const {
    const json* value = find(name);
    if (value == nullptr) fail(fmt::format("missing field '{}'", dotted(path_, name)));
    return *value;
  }

  [[noreturn]] void wrong_type(std::string_view name, std::string_view expected) const {
    fail(fmt::format("field '{}' must be {}, got {}", dotted(path_, name), expected,
                     type_name(*find(name))));
  }

  std::string string(std::string_view name) const {
    const json& value = required(name);
    if (!value.is_string()) wrong_type(name, "a string");
    return value.get<std::string>();
  }

  std::string string_or(std::string_view name, std::string fallback) const {
    return find(name) == nullptr ? std::move(fallback) : string(name);
  }

  int64_t int64(std::string_view name) const {
    const json& value = required(name);
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX)) {
      wrong_type(name, "an integer");
    }
    return value.get<int64_t>();
  }

  uint64_t uint64(std::string_view name) const {
    const json& value = required(name);
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<uint64_t>();
    wrong_type(name, "a non-negative integer");
  }

  double number_or(std::string_view name, double fallback) const {
    const json* value = find(name);
    if (value == nullptr) return fallback;
    if (!value->is_number()) wrong_type(name, "a number");
    return value->get<double>();
  }

  const json& array(std::string_view name) const {
    const json& value = required(name);
    if (!value.is_array()) wrong_type(name, "an array");
    return value;
  }

  const std::string& path() const { return path_; }

 private:
  const json& object_;
  std::string path_;
};

TaskKey task_from_json(const json& value) {
  Fields f(value, "task");
  TaskKey task;
  task.op = f.string("op");
  const json& shape = f.array("shape");
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_number_integer()) {
      fail(
          fmt::format("field 'task.shape[{}]' must be an integer, got {}", i, type_name(shape[i])));
    }
    task.shape.push_back(shape[i].get<int64_t>());
  }
  task.dtype = f.string_or("dtype", task.dtype);
  task.target_arch = f.string("arch");
  task.device_name = f.string("device");
  task.template_name = f.string("template");
  return task;
}

MeasureResult result_from_json(const json& value) {
  Fields f(value, "result");
  MeasureResult result;
  const std::string status = f.string("status");
  const auto parsed_status = parse_measure_status(status);
  if (!parsed_status) {
    fail(fmt::format("unknown status '{}' in 'result.status' (expected one of: {})", status,
                     measure_status_names()));
  }
  result.status = *parsed_status;
  const json& times = f.array("times");
  for (size_t i = 0; i < times.size(); ++i) {
    if (!times[i].is_number()) {
      fail(
          fmt::format("field 'result.times[{}]' must be a number, got {}", i, type_name(times[i])));
    }
    const double t = times[i].get<double>();
    // A kernel never runs in zero or negative time: such a value is a corrupt or forged log,
    // and would win every ranking it entered.
    if (!(std::isfinite(t) && t > 0)) {
      fail(fmt::format("field 'result.times[{}]' must be a positive number of seconds, got {}", i,
                       times[i].dump()));
    }
    result.times_s.push_back(t);
  }
  result.compile_s = f.number_or("compile_s", 0.0);
  const std::string timer = f.string_or("timer", "none");
  const auto parsed_timer = parse_timer_kind(timer);
  if (!parsed_timer) {
    fail(fmt::format("unknown timer '{}' in 'result.timer' (expected one of: {})", timer,
                     timer_kind_names()));
  }
  result.timer = *parsed_timer;
  result.error = f.string_or("error", "");
  result.max_rel_error = f.number_or("max_rel_error", -1.0);
  if (const json* extra = f.find("extra")) {
    try {
      result.details = measure_details_from_json(*extra, "result.extra");
    } catch (const std::invalid_argument& e) {
      fail(e.what());
    }
  }
  return result;
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

int two_digits(std::string_view text, size_t at) {
  return (text[at] - '0') * 10 + text[at + 1] - '0';
}

}  // namespace

std::string TaskKey::to_string() const {
  return fmt::format("{}[{} {}] {} {} ({})", op, fmt::join(shape, "x"), dtype, template_name,
                     target_arch, device_name);
}

nlohmann::ordered_json record_to_json(const Record& record) {
  nlohmann::ordered_json result = {
      {"status", std::string(cutune::to_string(record.result.status))},
      {"times", record.result.times_s},
      {"compile_s", record.result.compile_s},
      {"timer", std::string(cutune::to_string(record.result.timer))},
      {"error", record.result.error},
  };
  if (record.result.max_rel_error >= 0) result["max_rel_error"] = record.result.max_rel_error;
  if (!record.result.details.empty()) {
    result["extra"] = nlohmann::ordered_json(to_json(record.result.details));
  }
  nlohmann::ordered_json config = {{"index", record.config_index},
                                    {"knobs", nlohmann::ordered_json(record.knobs)}};
  if (record.trial >= 0) config["trial"] = record.trial;
  nlohmann::ordered_json out = {
      {"v", record.version},
      {"task",
       {{"op", record.task.op},
        {"shape", record.task.shape},
        {"dtype", record.task.dtype},
        {"arch", record.task.target_arch},
        {"device", record.task.device_name},
        {"template", record.task.template_name}}},
      {"config", std::move(config)},
      {"result", std::move(result)},
      {"time", record.timestamp},
  };
  if (record.kind == RecordKind::remeasure) out["kind"] = "remeasure";
  return out;
}

Record record_from_json(const json& value) {
  Fields f(value, "");
  Record record;
  const int64_t version = f.int64("v");
  if (version != kRecordVersion) {
    fail(fmt::format("unsupported version {} (this build reads version {})", version,
                     kRecordVersion));
  }
  record.version = static_cast<int>(version);
  record.task = task_from_json(f.required("task"));
  Fields config(f.required("config"), "config");
  record.config_index = config.uint64("index");
  if (const json* knobs = config.find("knobs")) {
    if (!knobs->is_object()) config.wrong_type("knobs", "an object");
    record.knobs = *knobs;
  }
  if (config.find("trial") != nullptr) {
    record.trial = config.int64("trial");
    if (record.trial < 0) fail("field 'config.trial' must be >= 0");
  }
  const std::string kind = f.string_or("kind", "trial");
  if (kind == "remeasure") {
    record.kind = RecordKind::remeasure;
  } else if (kind != "trial") {
    fail(fmt::format("unknown kind '{}' in 'kind' (expected trial or remeasure)", kind));
  }
  record.result = result_from_json(f.required("result"));
  record.timestamp = f.string("time");
  if (!is_valid_timestamp(record.timestamp)) {
    fail(
        fmt::format("field 'time' must be an ISO 8601 UTC time like 2026-11-30T09:00:00Z, "
                    "got '{}'",
                    record.timestamp));
  }
  return record;
}

std::string encode_record(const Record& record) {
  const MeasureResult& r = record.result;
  check_internal(record.version == kRecordVersion, "only the current version can be written");
  for (double t : r.times_s) check_internal(std::isfinite(t) && t > 0, "time not finite or <= 0");
  check_internal(std::isfinite(r.compile_s) && r.compile_s >= 0, "compile_s not finite or < 0");
  check_internal(r.max_rel_error == -1 || (std::isfinite(r.max_rel_error) && r.max_rel_error >= 0),
                 "max_rel_error must be -1 or finite and >= 0");
  check_internal(r.details.other.is_null() || r.details.other.is_object(),
                 "details.other must be null or an object");
  check_internal(record.knobs.is_object(), "knobs must be an object");
  check_internal(is_valid_timestamp(record.timestamp),
                 fmt::format("malformed timestamp '{}'", record.timestamp));
  // Compiler messages may carry bytes that are not UTF-8; replacing them keeps the record.
  return record_to_json(record).dump(-1, ' ', false,
                                     nlohmann::ordered_json::error_handler_t::replace);
}

Record decode_record(std::string_view line) {
  json value;
  try {
    value = json::parse(line.begin(), line.end());
  } catch (const json::parse_error& e) {
    fail(fmt::format("not valid JSON (syntax error at byte {})", e.byte));
  }
  return record_from_json(value);
}

std::string utc_timestamp_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t seconds = system_clock::to_time_t(now);
  const auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03d}Z", buffer, static_cast<int>(millis));
}

bool is_valid_timestamp(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.f+]Z
  if (t.size() < 20 || t.back() != 'Z') return false;
  if (t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':') return false;
  for (size_t at : {0, 5, 8, 11, 14, 17}) {
    if (!all_digits(t.substr(at, at == 0 ? 4 : 2))) return false;
  }
  const int month = two_digits(t, 5), day = two_digits(t, 8);
  const int hour = two_digits(t, 11), minute = two_digits(t, 14), second = two_digits(t, 17);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return false;
  }
  const std::string_view rest = t.substr(19, t.size() - 20);
  return rest.empty() || (rest[0] == '.' && all_digits(rest.substr(1)));
}

}  // namespace cutune

size_t std::hash<cutune::TaskKey>::operator()(const cutune::TaskKey& key) const noexcept {
  size_t h = 0;
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<std::string>{}(key.op));
  for (int64_t d : key.shape) mix(std::hash<int64_t>{}(d));
  mix(std::hash<std::string>{}(key.dtype));
  mix(std::hash<std::string>{}(key.target_arch));
  mix(std::hash<std::string>{}(key.device_name));
  mix(std::hash<std::string>{}(key.template_name));
  return h;
}
