#include "src/cli/cli_common.h"

#include <algorithm>
#include <charconv>
#include <iostream>

#include <fmt/format.h>

#include "src/runtime/device.h"
#include "src/measure/gpu_measurer.h"

namespace cutune::cli {

void TaskOptions::add_to(CLI::App& cmd, bool with_arch) {
  cmd.add_option("op", op, "operator (see `cutune ops`)")->required();
  cmd.add_option("--shape", shape, "problem shape, e.g. 1024,1024,1024 for gemm M,N,K")
      ->required();
  cmd.add_option("--template", template_name, "schedule template (default: the operator's first)");
  if (with_arch) {
    cmd.add_option("--arch", arch, "target architecture, e.g. sm_90 (default: detected GPU, else sm_90)");
  }
  cmd.add_flag("--json", json, "machine-readable output");
}

std::unique_ptr<Template> TaskOptions::make() const {
  return make_template(op, parse_shape(shape), template_name);
}

std::string TaskOptions::resolved_arch() const { return arch.empty() ? default_arch() : arch; }

ir::TargetLimits TaskOptions::limits() const {
  DeviceInfo d;
  try {
    d = target_limits(resolved_arch());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  for (const DeviceInfo& dev : list_devices()) {
    if (dev.arch() == resolved_arch()) {
      d = dev;
      break;
    }
  }
  ir::TargetLimits l = verifier_limits(d);
  l.arch = resolved_arch();
  return l;
}

Config parse_config(const ConfigSpace& space, const std::string& text) {
  uint64_t index = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
  if (ec == std::errc() && p == text.data() + text.size()) return space.get(index);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    throw UsageError(fmt::format(
        "bad --config '{}': expected a configuration index or a JSON object", text));
  }
  return space.from_json(j);
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << std::endl; }

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  size_t i = static_cast<size_t>(p * double(values.size() - 1) + 0.5);
  return values[std::min(i, values.size() - 1)];
}

}  // namespace cutune::cli
