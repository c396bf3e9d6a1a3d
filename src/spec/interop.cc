#include "src/spec/interop.h"

#include <map>
#include <numeric>

#include <fmt/format.h>

namespace cutune::spec {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const TaskKey& single_task(const std::vector<Record>& records) {
  if (records.empty()) throw RecordError("the log has no records");
  for (const Record& r : records)
    if (!(r.task == records.front().task))
      throw RecordError(
          fmt::format("the log holds more than one task ({} and {}); pick one log per task",
                      records.front().task.to_string(), r.task.to_string()));
  return records.front().task;
}

std::vector<std::pair<std::string, int64_t>> int_knobs(const Record& r) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [name, value] : r.knobs.items()) {
    if (!value.is_number_integer())
      throw RecordError(
          fmt::format("knob '{}' of config {} is not an integer ({}); only integer "
                      "parameters can be written",
                      name, r.config_index, value.dump()));
    out.emplace_back(name, value.get<int64_t>());
  }
  return out;
}

// Kernel Tuner's failure strings.
const char* kt_failure(MeasureStatus s) {
  switch (s) {
    case MeasureStatus::compile_error:
      return "CompilationFailedConfig";
    case MeasureStatus::invalid:
      return "InvalidConfig";
    default:
      return "RuntimeFailedConfig";
  }
}

const char* t4_invalidity(MeasureStatus s) {
  switch (s) {
    case MeasureStatus::ok:
      return "correct";
    case MeasureStatus::invalid:
      return "constraints";
    case MeasureStatus::compile_error:
      return "compile";
    case MeasureStatus::wrong_answer:
      return "correctness";
    default:
      return "runtime";
  }
}

}  // namespace

replay::KtCache records_to_kt_cache(const std::vector<Record>& records) {
  const TaskKey& task = single_task(records);
  replay::KtCache cache;
  cache.device_name = task.device_name;
  cache.kernel_name = task.template_name.empty() ? task.op : task.template_name;
  cache.problem_size = task.shape;
  cache.objective = "time";
  for (const auto& [name, v] : int_knobs(records.front())) cache.tune_params_keys.push_back(name);
  std::vector<std::vector<int64_t>> seen(cache.tune_params_keys.size());
  std::map<std::vector<int64_t>, size_t> position;
  for (const Record& r : records) {
    auto knobs = int_knobs(r);
    if (knobs.size() != cache.tune_params_keys.size())
      throw RecordError(fmt::format("config {} has {} knobs, the first record {}", r.config_index,
                                    knobs.size(), cache.tune_params_keys.size()));
    replay::KtEntry e;
    for (size_t i = 0; i < knobs.size(); ++i) {
      if (knobs[i].first != cache.tune_params_keys[i])
        throw RecordError(fmt::format("config {} names knob '{}' where the first record has '{}'",
                                      r.config_index, knobs[i].first, cache.tune_params_keys[i]));
      e.values.push_back(knobs[i].second);
      if (std::find(seen[i].begin(), seen[i].end(), knobs[i].second) == seen[i].end())
        seen[i].push_back(knobs[i].second);
    }
    e.valid = r.result.ok() && !r.result.times_s.empty();
    e.compile_ms = r.result.compile_s * 1e3;
    // The worker's check of the output against the reference, when it timed it.
    if (const auto& phases = r.result.details.timing.phase_s)
      if (auto check = phases->find("check"); check != phases->end())
        e.verification_ms = check->second * 1e3;
    if (e.valid) {
      for (double t : r.result.times_s) e.times_ms.push_back(t * 1e3);
      e.time_ms =
          std::accumulate(e.times_ms.begin(), e.times_ms.end(), 0.0) / double(e.times_ms.size());
    } else {
      e.error = r.result.ok() ? "RuntimeFailedConfig" : kt_failure(r.result.status);
    }
    auto [it, fresh] = position.emplace(e.values, cache.entries.size());
    if (fresh)
      cache.entries.push_back(std::move(e));
    else
      cache.entries[it->second] = std::move(e);
  }
  for (auto& values : seen) std::sort(values.begin(), values.end());
  cache.tune_params = std::move(seen);
  return cache;
}

ordered_json kt_cache_to_json(const replay::KtCache& cache) {
  ordered_json j;
  j["device_name"] = cache.device_name;
  j["kernel_name"] = cache.kernel_name;
  j["problem_size"] = cache.problem_size;
  j["tune_params_keys"] = cache.tune_params_keys;
  ordered_json params = ordered_json::object();
  for (size_t i = 0; i < cache.tune_params_keys.size(); ++i)
    params[cache.tune_params_keys[i]] = cache.tune_params[i];
  j["tune_params"] = params;
  j["objective"] = cache.objective.empty() ? "time" : cache.objective;
  ordered_json entries = ordered_json::object();
  for (const replay::KtEntry& e : cache.entries) {
    ordered_json entry;
    for (size_t i = 0; i < e.values.size(); ++i) entry[cache.tune_params_keys[i]] = e.values[i];
    if (e.valid) {
      entry["time"] = e.time_ms;
      entry["times"] = e.times_ms;
    } else {
      entry["time"] = e.error;
    }
    if (e.gflops) entry["GFLOP/s"] = *e.gflops;
    if (e.gbs) entry["GB/s"] = *e.gbs;
    // Kernel Tuner's simulation mode adds these up as the time a run would have taken.
    entry["compile_time"] = e.compile_ms.value_or(0);
    entry["verification_time"] = e.verification_ms.value_or(0);
    entry["benchmark_time"] =
        e.valid ? std::accumulate(e.times_ms.begin(), e.times_ms.end(), 0.0) : 0.0;
    entry["strategy_time"] = 0;
    entry["framework_time"] = 0;
    entries[fmt::format("{}", fmt::join(e.values, ","))] = std::move(entry);
  }
  j["cache"] = std::move(entries);
  return j;
}

ordered_json records_to_t4(const std::vector<Record>& records) {
  const TaskKey& task = single_task(records);
  ordered_json results = ordered_json::array();
  for (const Record& r : records) {
    ordered_json config = ordered_json::object();
    for (const auto& [name, v] : int_knobs(r)) config[name] = v;
    std::vector<double> runtimes;
    for (double t : r.result.times_s) runtimes.push_back(t * 1e3);
    ordered_json res;
    res["timestamp"] = r.timestamp;
    res["configuration"] = config;
    res["objectives"] = {"time"};
    res["times"] = {{"compilation_time", r.result.compile_s * 1e3}, {"runtimes", runtimes}};
    res["invalidity"] = t4_invalidity(r.result.status);
    res["correctness"] = r.result.status == MeasureStatus::wrong_answer ? 0 : 1;
    const double ms =
        r.result.ok() && !runtimes.empty()
            ? std::accumulate(runtimes.begin(), runtimes.end(), 0.0) / double(runtimes.size())
            : 0.0;
    res["measurements"] = ordered_json::array();
    if (r.result.ok())
      res["measurements"].push_back({{"name", "time"}, {"value", ms}, {"unit", "ms"}});
    results.push_back(std::move(res));
  }
  ordered_json j;
  j["schema_version"] = "1.0.0";
  j["metadata"] = {{"tuner", "cutune"},
                   {"kernel", task.template_name.empty() ? task.op : task.template_name},
                   {"problem_size", task.shape},
                   {"device", task.device_name},
                   {"arch", task.target_arch},
                   {"timeunit", "milliseconds"}};
  j["results"] = std::move(results);
  return j;
}

std::vector<T4Result> parse_t4(const json& j) {
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    throw RecordError("T4: no \"results\" array");
  std::vector<T4Result> out;
  for (size_t i = 0; i < j["results"].size(); ++i) {
    const json& r = j["results"][i];
    const std::string where = fmt::format("T4 results[{}]", i);
    if (!r.is_object() || !r.contains("configuration") || !r["configuration"].is_object())
      throw RecordError(where + ".configuration must be an object");
    T4Result t;
    t.configuration = r["configuration"];
    t.invalidity = r.value("invalidity", std::string("correct"));
    t.timestamp = r.value("timestamp", std::string());
    if (auto times = r.find("times"); times != r.end() && times->is_object()) {
      if (auto rt = times->find("runtimes"); rt != times->end()) {
        if (!rt->is_array()) throw RecordError(where + ".times.runtimes must be an array");
        t.runtimes_ms = rt->get<std::vector<double>>();
      }
      t.compile_ms = times->value("compilation_time", 0.0);
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace cutune::spec
