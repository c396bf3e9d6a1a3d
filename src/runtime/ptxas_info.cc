#include "src/runtime/ptxas_info.h"

#include <charconv>
#include <optional>
#include <string>

namespace cutune {

namespace {

// The quoted or bare function name after `prefix`, if the line contains it.
std::optional<std::string_view> name_after(std::string_view line, std::string_view prefix) {
  const size_t at = line.find(prefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + prefix.size());
  if (!rest.empty() && rest.front() == '\'') {
    rest.remove_prefix(1);
    return rest.substr(0, rest.find('\''));
  }
  const size_t end = rest.find_first_of(" \t\r");
  return rest.substr(0, end);
}

// The integer that ends (before blanks) at position `at` of `line`.
std::optional<int> number_ending_at(std::string_view line, size_t at) {
  size_t end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  int value = 0;
  if (begin == end) return std::nullopt;
  if (std::from_chars(line.data() + begin, line.data() + end, value).ec != std::errc{})
    return std::nullopt;
  return value;
}

// The integer just before the first `unit` in `line` ("992 bytes stack frame" -> 992).
std::optional<int> number_before(std::string_view line, std::string_view unit) {
  const size_t at = line.find(unit);
  if (at == std::string_view::npos) return std::nullopt;
  return number_ending_at(line, at);
}

// Sum of "N bytes cmem[K]" entries on a "Used" line.
int constant_bytes(std::string_view line) {
  int total = 0;
  size_t from = 0;
  while (true) {
    const size_t at = line.find("bytes cmem[", from);
    if (at == std::string_view::npos) break;
    total += number_ending_at(line, at).value_or(0);
    from = at + 1;
  }
  return total;
}

}  // namespace

PtxasInfo parse_ptxas_info(std::string_view log, std::string_view kernel_name) {
  PtxasInfo info;
  std::string target(kernel_name);
  // ptxas prints "Compiling entry function" before an entry's "Used" line and
  // "Function properties for" before every function's stack line, entries or not.
  std::string compiling;
  std::string properties_of;
  size_t start = 0;
  while (start <= log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(start, end - start);
    start = end + 1;

    if (auto name = name_after(line, "Compiling entry function ")) {
      compiling = std::string(*name);
      if (target.empty()) target = compiling;
      continue;
    }
    if (auto name = name_after(line, "Function properties for ")) {
      properties_of = std::string(*name);
      continue;
    }
    if (target.empty()) continue;
    if (line.find("bytes stack frame") != std::string_view::npos && properties_of == target) {
      info.stack_frame_bytes = number_before(line, "bytes stack frame").value_or(0);
      info.spill_store_bytes = number_before(line, "bytes spill stores").value_or(0);
      info.spill_load_bytes = number_before(line, "bytes spill loads").value_or(0);
      continue;
    }
    if (line.find("Used ") != std::string_view::npos && compiling == target) {
      if (auto registers = number_before(line, "registers")) {
        info.registers = *registers;
        info.parsed = true;
      }
      info.barriers = number_before(line, "barriers").value_or(0);
      info.shared_bytes = number_before(line, "bytes smem").value_or(0);
      info.constant_bytes = constant_bytes(line);
    }
  }
  return info;
}

}  // namespace cutune
