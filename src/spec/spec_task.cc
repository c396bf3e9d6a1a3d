#include "src/spec/spec_task.h"

#include <fmt/format.h>

#include "src/spec/spec_buffers.h"

namespace cutune::spec {

namespace {

constexpr const char* kAxes[] = {"X", "Y", "Z"};

int64_t eval_int(const SpecExpr& e, const std::vector<int64_t>& values, const std::string& field) {
  const double v = e.parsed->evaluate(values);
  if (!(v == static_cast<double>(static_cast<int64_t>(v))))
    throw SpecError(fmt::format("{} '{}' is not an integer ({})", field, e.text, v));
  return static_cast<int64_t>(v);
}

std::string kernel_expression(const KernelSpec& spec, const std::string& name,
                              const std::vector<int64_t>& params) {
  if (spec.template_arguments.empty()) return name;
  std::vector<std::string> args;
  for (const std::string& a : spec.template_arguments) {
    const int at = spec.space.parameter_position(a);
    args.push_back(at >= 0 ? std::to_string(params[static_cast<size_t>(at)]) : a);
  }
  return fmt::format("{}<{}>", name, fmt::join(args, ", "));
}

}  // namespace

SpecTask::SpecTask(KernelSpec spec)
    : spec_(std::move(spec)), space_(std::make_unique<ConfigSpace>()) {
  replay::define_t1_space(spec_.space, *space_);
  if (spec_.kernel_file_exists && spec_.kernel_error.empty()) source_ = spec_.read_kernel_source();
}

const std::string& SpecTask::source() const {
  if (!spec_.kernel_error.empty()) throw SpecError(spec_.kernel_error);
  if (source_.empty()) spec_.read_kernel_source();  // throws the one-line "no file" error
  return source_;
}

std::vector<int64_t> SpecTask::params_of(const Config& config) const {
  std::vector<int64_t> p;
  for (size_t i = 0; i < spec_.space.parameters.size(); ++i)
    p.push_back(config.get(static_cast<int>(i)));
  return p;
}

Config SpecTask::config_of(const std::vector<int64_t>& params) const {
  std::vector<int32_t> entities;
  for (size_t i = 0; i < params.size(); ++i) {
    auto e = space_->knobs()[i].find_value(params[i]);
    if (!e)
      throw SpecError(
          fmt::format("{} = {} is not one of its values", space_->knobs()[i].name(), params[i]));
    entities.push_back(static_cast<int32_t>(*e));
  }
  return Config(space_.get(), std::move(entities));
}

std::vector<Config> SpecTask::seed_configs() const {
  try {
    Config c = config_of(spec_.reference.configuration);
    if (space_->is_valid(c)) return {c};
  } catch (const SpecError&) {
    // A reference outside the space (values not listed): nothing to start from.
  }
  return {};
}

SpecInstance SpecTask::instantiate(const std::vector<int64_t>& params) const {
  SpecInstance in;
  in.params = params;
  const std::vector<int64_t> values = spec_.values_for(params);
  int64_t block[3], grid[3];
  for (int d = 0; d < 3; ++d) {
    block[d] = eval_int(spec_.block[d], values, fmt::format("LocalSize.{}", kAxes[d]));
    const int64_t global = eval_int(spec_.grid[d], values, fmt::format("GlobalSize.{}", kAxes[d]));
    if (spec_.grid_is_blocks) {
      grid[d] = global;
    } else {
      // OpenCL style: a number of threads (or of work items), divided by the product of
      // GridDiv (default: the block size) and rounded up, as Kernel Tuner does.
      int64_t div = 1;
      if (spec_.grid_div[d].empty()) div = block[d];
      for (const SpecExpr& e : spec_.grid_div[d])
        div *= eval_int(e, values, fmt::format("GridDiv{}", kAxes[d]));
      grid[d] = div > 0 ? (global + div - 1) / div : 0;
    }
  }
  auto dim = [](const int64_t v[3]) {
    auto clamp = [](int64_t x) {
      return static_cast<uint32_t>(std::clamp<int64_t>(x, 0, UINT32_MAX));
    };
    return Dim3{clamp(v[0]), clamp(v[1]), clamp(v[2])};
  };
  in.launch.block = dim(block);
  in.launch.grid = dim(grid);
  const int64_t smem = eval_int(spec_.shared_memory, values, "SharedMemory");
  in.launch.dynamic_smem_bytes = static_cast<uint32_t>(std::clamp<int64_t>(smem, 0, UINT32_MAX));
  for (const SpecArgument& a : spec_.arguments) {
    const int64_t n = eval_int(a.size, values, fmt::format("Arguments '{}' Size", a.name));
    if (n < 1)
      throw SpecError(fmt::format("argument '{}' has Size {} ('{}')", a.name, n, a.size.text));
    in.elements.push_back(n);
    in.fill_values.push_back(a.fill_expr ? a.fill_expr->parsed->evaluate(values) : a.fill_value);
  }
  for (size_t i = 0; i < params.size(); ++i)
    in.defines += fmt::format("#define {} {}\n", spec_.space.parameters[i].name, params[i]);
  in.kernel_expression = kernel_expression(spec_, spec_.kernel_name, params);
  return in;
}

std::optional<std::string> SpecTask::launch_violation(const SpecInstance& in,
                                                      const DeviceInfo& device) {
  const Dim3& b = in.launch.block;
  const Dim3& g = in.launch.grid;
  if (b.x == 0 || b.y == 0 || b.z == 0)
    return fmt::format("LocalSize: block size ({},{},{}) has a zero", b.x, b.y, b.z);
  if (g.x == 0 || g.y == 0 || g.z == 0)
    return fmt::format("GlobalSize: grid size ({},{},{}) has a zero", g.x, g.y, g.z);
  if (b.x > 1024 || b.y > 1024 || b.z > 64)
    return fmt::format(
        "LocalSize: block size ({},{},{}) exceeds the per-dimension limit (1024,1024,64)", b.x, b.y,
        b.z);
  if (b.volume() > static_cast<uint64_t>(device.max_threads_per_block))
    return fmt::format("LocalSize: a block of {} threads exceeds the device's {}", b.volume(),
                       device.max_threads_per_block);
  if (g.x > 2147483647u || g.y > 65535 || g.z > 65535)
    return fmt::format("GlobalSize: grid size ({},{},{}) exceeds the limit (2^31-1,65535,65535)",
                       g.x, g.y, g.z);
  const int smem_limit = std::max(device.max_shared_per_block_optin, device.max_shared_per_block);
  if (in.launch.dynamic_smem_bytes > static_cast<uint32_t>(smem_limit))
    return fmt::format("SharedMemory: {} bytes exceed the device's {}",
                       in.launch.dynamic_smem_bytes, smem_limit);
  return std::nullopt;
}

CudaSource SpecTask::nvrtc_source(const SpecInstance& in, const std::string& kernel_name,
                                  const std::string& file_source) const {
  CudaSource src;
  // A template's instantiation is an NVRTC name expression (src/runtime/nvrtc_builder.h).
  src.kernel_name =
      kernel_name.empty() ? in.kernel_expression : kernel_expression(spec_, kernel_name, in.params);
  src.code = in.defines + fmt::format("#line 1 \"{}\"\n", spec_.kernel_file.filename().string()) +
             (file_source.empty() ? source() : file_source);
  src.launch = in.launch;
  for (size_t i = 0; i < spec_.arguments.size(); ++i) {
    const SpecArgument& a = spec_.arguments[i];
    if (a.is_constant) continue;
    src.params.push_back(kernel_param(a, in.elements[i]));
  }
  return src;
}

CudaSource SpecTask::emulator_source(const SpecInstance& in, const std::string& kernel_name,
                                     const std::string& file_source) const {
  CudaSource src;
  src.kernel_name = "cutune_spec_entry";
  src.launch = in.launch;
  const std::string& user = file_source.empty() ? source() : file_source;
  const std::string callee =
      kernel_name.empty() ? in.kernel_expression : kernel_expression(spec_, kernel_name, in.params);
  std::vector<std::string> params, call_args, copies;
  for (size_t i = 0; i < spec_.arguments.size(); ++i) {
    const SpecArgument& a = spec_.arguments[i];
    src.params.push_back(kernel_param(a, in.elements[i]));
    const std::string name = fmt::format("cutune_arg{}", i);
    const char* type = elem_c_type(a.type);
    if (a.is_scalar) {
      params.push_back(fmt::format("{} {}", type, name));
      call_args.push_back(name);
    } else if (a.is_constant) {
      params.push_back(fmt::format("const {}* {}", type, name));
      copies.push_back(
          fmt::format("    cutune_emu_fill_constant(&{0}, sizeof({0}), {1}, {2}ull, \"{0}\");\n",
                      a.name, name, in.elements[i] * elem_bytes(a.type)));
    } else {
      params.push_back(fmt::format("{}* {}", type, name));
      call_args.push_back(name);
    }
  }
  std::string entry = "\n#line 1 \"cutune_spec_entry\"\n";
  if (!copies.empty()) entry += "static int cutune_spec_constants_state = 0;\n";
  entry += fmt::format("extern \"C\" void cutune_spec_entry({}) {{\n", fmt::join(params, ", "));
  if (!copies.empty()) {
    entry += "  if (cutune_emu_once_begin(&cutune_spec_constants_state)) {\n";
    for (const std::string& c : copies) entry += c;
    entry += "    cutune_emu_once_end(&cutune_spec_constants_state);\n  }\n";
  }
  entry += fmt::format("  {}({});\n}}\n", callee, fmt::join(call_args, ", "));
  src.code = in.defines + fmt::format("#line 1 \"{}\"\n", spec_.kernel_file.filename().string()) +
             user + entry;
  return src;
}

}  // namespace cutune::spec
