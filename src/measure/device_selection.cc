#include "src/measure/device_selection.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "src/base/errors.h"

namespace cutune {

namespace {

std::vector<int> parse_ordinals(const std::string& spec) {
  std::vector<int> out;
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, end - start);
    if (item.empty() || item.size() > 4 ||
        !std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw UserError(fmt::format(
          "--devices: '{}' is not 'all' or a comma-separated list of GPU ordinals", spec));
    out.push_back(std::stoi(item));
    if (end == spec.size()) return out;
    start = end + 1;
  }
}

}  // namespace

std::vector<int> select_devices(const std::string& spec, const std::vector<DeviceInfo>& present,
                                const std::string& arch) {
  const bool all = spec.empty() || spec == "all";
  std::vector<int> chosen = all ? std::vector<int>{} : parse_ordinals(spec);  // syntax first
  if (present.empty()) return {};
  if (all) {
    auto first = std::find_if(present.begin(), present.end(), [&](const DeviceInfo& d) {
      return arch.empty() || d.arch() == arch;
    });
    if (first == present.end())
      throw UserError(
          fmt::format("no GPU of architecture {} among the {} present", arch, present.size()));
    for (const DeviceInfo& d : present)
      if (d.name == first->name) chosen.push_back(d.ordinal);
    return chosen;
  }
  if (std::set<int>(chosen.begin(), chosen.end()).size() != chosen.size())
    throw UserError(fmt::format("--devices: '{}' names a GPU twice", spec));
  const DeviceInfo* kind = nullptr;
  for (int ordinal : chosen) {
    auto it = std::find_if(present.begin(), present.end(),
                           [&](const DeviceInfo& d) { return d.ordinal == ordinal; });
    if (it == present.end())
      throw UserError(
          fmt::format("--devices: there is no GPU {} ({} present)", ordinal, present.size()));
    if (kind == nullptr) kind = &*it;
    if (it->name != kind->name)
      throw UserError(
          fmt::format("--devices: GPU {} is a {} and GPU {} a {}; one task measures "
                      "on GPUs of one kind",
                      kind->ordinal, kind->name, ordinal, it->name));
  }
  return chosen;
}

}  // namespace cutune
