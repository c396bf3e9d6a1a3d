#include "src/records/measure_details.h"

#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

namespace cutune {
namespace {

using nlohmann::json;

template <typename T>
using Tag = std::type_identity<T>;

// get(s): member m of s (const when s is).
template <typename S, typename M>
struct Member {
  M S::*m;
  M& operator()(S& s) const { return s.*m; }
  const M& operator()(const S& s) const { return s.*m; }
};

template <typename S, typename M>
Member<S, M> member(M S::*m) {
  return {m};
}

// get(d): member m of d's group g.
template <typename G, typename M>
struct GroupMember {
  G MeasureDetails::*g;
  Member<G, M> m;
  M& operator()(MeasureDetails& d) const { return m(d.*g); }
  const M& operator()(const MeasureDetails& d) const { return m(d.*g); }
};

template <typename G, typename M>
GroupMember<G, M> in_group(G MeasureDetails::*g, Member<G, M> m) {
  return {g, m};
}

// The one list of keys. Each struct's fields call f(key, get) once per member, in any order
// (to_json sorts), where get(s) returns that member of s.
template <typename F>
void fields(Tag<GpuState>, F&& f) {
  f("available", member(&GpuState::available));
  f("error", member(&GpuState::error));
  f("sm_clock_mhz", member(&GpuState::sm_clock_mhz));
  f("max_sm_clock_mhz", member(&GpuState::max_sm_clock_mhz));
  f("temperature_c", member(&GpuState::temperature_c));
  f("throttle_reasons", member(&GpuState::throttle_reasons));
  f("throttled", member(&GpuState::throttled));
}

template <typename F>
void fields(Tag<GpuConditions>, F&& f) {
  f("device", member(&GpuConditions::device));
  f("gpu_before", member(&GpuConditions::gpu_before));
  f("gpu_after", member(&GpuConditions::gpu_after));
  f("throttled", member(&GpuConditions::throttled));
}

template <typename F>
void fields(Tag<TimingStats>, F&& f) {
  f("stop", member(&TimingStats::stop));
  f("median_ci_s", member(&TimingStats::median_ci_s));
  f("rel_ci", member(&TimingStats::rel_ci));
  f("l2_flush_bytes", member(&TimingStats::l2_flush_bytes));
  f("early_stopped", member(&TimingStats::early_stopped));
  f("timer_note", member(&TimingStats::timer_note));
  f("phase_s", member(&TimingStats::phase_s));
  f("setup_s", member(&TimingStats::setup_s));
}

template <typename F>
void fields(Tag<RoundStats>, F&& f) {
  f("rounds", member(&RoundStats::rounds));
  f("round_medians_s", member(&RoundStats::round_medians_s));
  f("mixed_timers", member(&RoundStats::mixed_timers));
  f("remeasure_rounds", member(&RoundStats::remeasure_rounds));
}

template <typename F>
void fields(Tag<CompileFacts>, F&& f) {
  f("registers", member(&CompileFacts::registers));
  f("spill_bytes", member(&CompileFacts::spill_bytes));
  f("static_smem_bytes", member(&CompileFacts::static_smem_bytes));
  f("cubin_bytes", member(&CompileFacts::cubin_bytes));
  f("compiled_ahead", member(&CompileFacts::compiled_ahead));
}

template <typename F>
void fields(Tag<BaselineFacts>, F&& f) {
  f("reference", member(&BaselineFacts::reference));
  f("cudnn_note", member(&BaselineFacts::cudnn_note));
  f("baseline", member(&BaselineFacts::name));
  f("baseline_algo", member(&BaselineFacts::baseline_algo));
  f("baseline_s", member(&BaselineFacts::baseline_s));
  f("baseline_median_ci_s", member(&BaselineFacts::baseline_median_ci_s));
  f("baseline_runs", member(&BaselineFacts::baseline_runs));
  f("baseline_timer", member(&BaselineFacts::baseline_timer));
  f("baseline_max_rel_error", member(&BaselineFacts::baseline_max_rel_error));
  f("cudnn_reference_algo", member(&BaselineFacts::cudnn_reference_algo));
  f("cudnn_graph_plans", member(&BaselineFacts::cudnn_graph_plans));
  f("cudnn_graph_note", member(&BaselineFacts::cudnn_graph_note));
  f("cudnn_vs_cpu_max_rel_error", member(&BaselineFacts::cudnn_vs_cpu_max_rel_error));
  f("cublas_algo", member(&BaselineFacts::cublas_algo));
  f("cublaslt_algos", member(&BaselineFacts::cublaslt_algos));
  f("cublaslt_note", member(&BaselineFacts::cublaslt_note));
  f("cublas_time_s", member(&BaselineFacts::cublas_time_s));
}

template <typename F>
void fields(Tag<EmulatorFacts>, F&& f) {
  f("emulated", member(&EmulatorFacts::emulated));
  f("time_is", member(&EmulatorFacts::time_is));
  f("emulator_status", member(&EmulatorFacts::emulator_status));
  f("tolerance", member(&EmulatorFacts::tolerance));
}

template <typename F>
void fields(Tag<WorkerEcho>, F&& f) {
  f("pid", member(&WorkerEcho::pid));
  f("setups", member(&WorkerEcho::setups));
  f("task", member(&WorkerEcho::task));
  f("baseline_spec", member(&WorkerEcho::baseline_spec));
}

// On disk the groups are one flat object: a group's keys are MeasureDetails' keys.
template <typename G, typename F>
void group_fields(G MeasureDetails::*g, F& f) {
  fields(Tag<G>{}, [&](std::string_view key, auto get) { f(key, in_group(g, get)); });
}

template <typename F>
void fields(Tag<MeasureDetails>, F&& f) {
  group_fields(&MeasureDetails::gpu, f);
  group_fields(&MeasureDetails::timing, f);
  group_fields(&MeasureDetails::rounds, f);
  group_fields(&MeasureDetails::compile, f);
  group_fields(&MeasureDetails::baseline, f);
  group_fields(&MeasureDetails::emulator, f);
  group_fields(&MeasureDetails::worker, f);
}

std::string_view type_name(const json& value) {
  if (value.is_number_integer()) return "integer";
  return value.type_name();
}

std::string dotted(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, key);
}

[[noreturn]] void wrong_type(const std::string& path, std::string_view expected, const json& v) {
  throw std::invalid_argument(
      fmt::format("field '{}' must be {}, got {}", path, expected, type_name(v)));
}

template <typename T>
void decode_object(const json& j, const std::string& path, T& out);

void decode(const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) wrong_type(path, "true or false", v);
  out = v.get<bool>();
}

void decode(const json& v, const std::string& path, int64_t& out) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
    wrong_type(path, "an integer", v);
  out = v.get<int64_t>();
}

// JSON has no infinity or NaN: nlohmann writes them as null, so null reads back as NaN and
// is written as null again.
void decode(const json& v, const std::string& path, double& out) {
  if (v.is_null()) {
    out = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  if (!v.is_number()) wrong_type(path, "a number", v);
  out = v.get<double>();
}

void decode(const json& v, const std::string& path, std::string& out) {
  if (!v.is_string()) wrong_type(path, "a string", v);
  out = v.get<std::string>();
}

void decode(const json& v, const std::string& path, std::vector<double>& out) {
  if (!v.is_array()) wrong_type(path, "an array of numbers", v);
  out.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) decode(v[i], fmt::format("{}[{}]", path, i), out[i]);
}

void decode(const json& v, const std::string& path, SecondsInterval& out) {
  if (!v.is_array() || v.size() != 2) wrong_type(path, "[lo, hi] in seconds", v);
  for (size_t i = 0; i < 2; ++i) decode(v[i], fmt::format("{}[{}]", path, i), out[i]);
}

void decode(const json& v, const std::string& path, std::map<std::string, double>& out) {
  if (!v.is_object()) wrong_type(path, "an object of seconds", v);
  for (auto it = v.begin(); it != v.end(); ++it)
    decode(it.value(), dotted(path, it.key()), out[it.key()]);
}

void decode(const json& v, const std::string&, json& out) { out = v; }

void decode(const json& v, const std::string& path, std::variant<int64_t, std::string>& out) {
  if (v.is_string()) {
    out = v.get<std::string>();
  } else {
    int64_t ordinal = 0;
    if (!v.is_number_integer()) wrong_type(path, "an integer or a string", v);
    decode(v, path, ordinal);
    out = ordinal;
  }
}

void decode(const json& v, const std::string& path, GpuState& out) { decode_object(v, path, out); }

json encode(const SecondsInterval& v) { return json::array({v[0], v[1]}); }
json encode(const std::variant<int64_t, std::string>& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}
json encode(const GpuState& s) { return to_json(s); }
template <typename T>
json encode(const T& v) {
  return json(v);
}

// The known keys of T, for telling the unknown ones apart.
template <typename T>
const std::set<std::string, std::less<>>& known_keys() {
  static const std::set<std::string, std::less<>> keys = [] {
    std::set<std::string, std::less<>> out;
    fields(Tag<T>{}, [&](std::string_view key, auto) { out.emplace(key); });
    return out;
  }();
  return keys;
}

template <typename T>
void decode_object(const json& j, const std::string& path, T& out) {
  if (!j.is_object()) wrong_type(path, "an object", j);
  size_t known = 0;
  fields(Tag<T>{}, [&](std::string_view key, auto get) {
    auto it = j.find(key);
    if (it == j.end()) return;
    ++known;
    auto& member = get(out);
    decode(*it, dotted(path, key), member.emplace());
  });
  if (known == j.size()) return;
  out.other = json::object();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known_keys<T>().contains(it.key())) out.other[it.key()] = it.value();
}

template <typename T>
json encode_object(const T& s) {
  if (!(s.other.is_null() || s.other.is_object()))
    throw std::logic_error("internal error: measure details: 'other' must be null or an object");
  json out = s.other.is_object() ? s.other : json::object();
  fields(Tag<T>{}, [&](std::string_view key, auto get) {
    const auto& member = get(s);
    if (member) out[std::string(key)] = encode(*member);
  });
  return out;
}

template <typename T>
void merge_fields(T& into, const T& newer) {
  fields(Tag<T>{}, [&](std::string_view, auto get) {
    if (get(newer)) get(into) = get(newer);
  });
}

}  // namespace

std::optional<int64_t> GpuConditions::ordinal() const {
  if (!device) return std::nullopt;
  if (const int64_t* o = std::get_if<int64_t>(&*device)) return *o;
  return std::nullopt;
}

void BaselineFacts::merge(const BaselineFacts& newer) { merge_fields(*this, newer); }

bool MeasureDetails::empty() const {
  bool any = false;
  fields(Tag<MeasureDetails>{}, [&](std::string_view, auto get) { any = any || get(*this); });
  return !any && (other.is_null() || other.empty());
}

void MeasureDetails::merge(const MeasureDetails& newer) {
  merge_fields(*this, newer);
  if (newer.other.is_object() && !newer.other.empty()) {
    if (!other.is_object()) other = json::object();
    other.update(newer.other);
  }
}

json to_json(const GpuState& s) { return encode_object(s); }

json to_json(const MeasureDetails& d) { return d.empty() ? json() : encode_object(d); }

MeasureDetails measure_details_from_json(const json& j, std::string_view path) {
  MeasureDetails d;
  if (!j.is_null()) decode_object(j, std::string(path), d);
  return d;
}

}  // namespace cutune
