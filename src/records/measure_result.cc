#include "src/records/measure_result.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <utility>

namespace cutune {
namespace {

constexpr std::array<std::pair<MeasureStatus, std::string_view>, 7> kStatusNames = {{
    {MeasureStatus::ok, "ok"},
    {MeasureStatus::invalid, "invalid"},
    {MeasureStatus::compile_error, "compile_error"},
    {MeasureStatus::launch_error, "launch_error"},
    {MeasureStatus::runtime_error, "runtime_error"},
    {MeasureStatus::timeout, "timeout"},
    {MeasureStatus::wrong_answer, "wrong_answer"},
}};

constexpr std::array<std::pair<TimerKind, std::string_view>, 5> kTimerNames = {{
    {TimerKind::none, "none"},
    {TimerKind::cupti, "cupti"},
    {TimerKind::cuda_event, "cuda_event"},
    {TimerKind::replay, "replay"},
    {TimerKind::emulator, "emulator"},
}};

template <typename Table, typename Enum>
std::string_view name_of(const Table& table, Enum value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";
}

template <typename Enum, typename Table>
std::optional<Enum> find_name(const Table& table, std::string_view name) {
  for (const auto& [e, n] : table) {
    if (n == name) return e;
  }
  return std::nullopt;
}

template <typename Table>
std::string join_names(const Table& table) {
  std::string out;
  for (const auto& [e, name] : table) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace

std::string_view to_string(MeasureStatus status) { return name_of(kStatusNames, status); }
std::string_view to_string(TimerKind timer) { return name_of(kTimerNames, timer); }

std::optional<MeasureStatus> parse_measure_status(std::string_view name) {
  return find_name<MeasureStatus>(kStatusNames, name);
}

std::optional<TimerKind> parse_timer_kind(std::string_view name) {
  return find_name<TimerKind>(kTimerNames, name);
}

std::string measure_status_names() { return join_names(kStatusNames); }
std::string timer_kind_names() { return join_names(kTimerNames); }

double MeasureResult::median_s() const {
  if (times_s.empty()) return std::numeric_limits<double>::infinity();
  std::vector<double> sorted = times_s;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

double MeasureResult::mean_s() const {
  if (times_s.empty()) return std::numeric_limits<double>::infinity();
  return std::accumulate(times_s.begin(), times_s.end(), 0.0) / static_cast<double>(times_s.size());
}

}  // namespace cutune
