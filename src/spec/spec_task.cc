#include "src/spec/spec_task.h"

#include <algorithm>
#include <filesystem>
#include <regex>

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

// Kernel Tuner's names of the block's dimensions, and its defaults where a spec has no such
// parameter.
constexpr const char* kBlockNames[] = {"block_size_x", "block_size_y", "block_size_z"};
constexpr int64_t kBlockDefaults[] = {256, 1, 1};
constexpr const char* kGridNames[] = {"grid_size_x", "grid_size_y", "grid_size_z"};

std::optional<int64_t> parameter(const KernelSpec& spec, const std::vector<int64_t>& params,
                                 const char* name) {
  const int at = spec.space.parameter_position(name);
  if (at < 0) return std::nullopt;
  return params[static_cast<size_t>(at)];
}

// The launch as Kernel Tuner computes it: the block from the block-size parameters, the grid
// ProblemSize over the product of GridDiv (default: the block-size parameter, else 1), rounded
// up.
void kernel_tuner_launch(const KernelSpec& spec, const std::vector<int64_t>& params,
                         const std::vector<int64_t>& values, int64_t block[3], int64_t grid[3]) {
  for (int d = 0; d < 3; ++d) {
    const std::optional<int64_t> named = parameter(spec, params, kBlockNames[d]);
    block[d] = named.value_or(kBlockDefaults[d]);
    int64_t div = 1;
    if (spec.grid_div[d].empty()) div = named.value_or(1);
    for (const SpecExpr& e : spec.grid_div[d])
      div *= eval_int(e, values, fmt::format("GridDiv{}", kAxes[d]));
    if (div < 1) throw SpecError(fmt::format("GridDiv{} is {}: not a positive divisor", kAxes[d], div));
    const int64_t size = size_t(d) < spec.problem_size.size() ? spec.problem_size[size_t(d)] : 1;
    grid[d] = (size + div - 1) / div;
  }
}

// cutune's rule ("CutuneLaunch": "GlobalSize"): LocalSize is the block; GlobalSize the grid in
// blocks, or (OpenCL style) in threads divided by GridDiv (default: the block) and rounded up.
void global_size_launch(const KernelSpec& spec, const std::vector<int64_t>& values,
                        int64_t block[3], int64_t grid[3]) {
  for (int d = 0; d < 3; ++d) {
    block[d] = eval_int(spec.block[d], values, fmt::format("LocalSize.{}", kAxes[d]));
    const int64_t global = eval_int(spec.grid[d], values, fmt::format("GlobalSize.{}", kAxes[d]));
    if (spec.grid_is_blocks) {
      grid[d] = global;
      continue;
    }
    int64_t div = 1;
    if (spec.grid_div[d].empty()) div = block[d];
    for (const SpecExpr& e : spec.grid_div[d])
      div *= eval_int(e, values, fmt::format("GridDiv{}", kAxes[d]));
    grid[d] = div > 0 ? (global + div - 1) / div : 0;
  }
}

// Kernel Tuner's rule for a parameter named "...loop_unroll_factor...": `#pragma unroll NAME`
// needs a constant expression, not a macro, so it is a constexpr int; 0 removes those pragmas.
bool is_unroll_factor(const std::string& name) {
  return name.find("loop_unroll_factor") != std::string::npos;
}

// What Kernel Tuner defines in front of the kernel, in its order: the grid's and the block's
// dimensions, every parameter (a parameter of one of those names gives its own value), and
// kernel_tuner.
std::string kernel_tuner_defines(const KernelSpec& spec, const std::vector<int64_t>& params,
                                 const Dim3& grid, const Dim3& block) {
  std::string out;
  const uint32_t g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  for (int d = 0; d < 3; ++d)
    out += fmt::format("#define {} {}\n", kGridNames[d],
                       parameter(spec, params, kGridNames[d]).value_or(g[d]));
  for (int d = 0; d < 3; ++d)
    out += fmt::format("#define {} {}\n", kBlockNames[d],
                       parameter(spec, params, kBlockNames[d]).value_or(b[d]));
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = spec.space.parameters[i].name;
    const bool defined = std::find(std::begin(kGridNames), std::end(kGridNames), name) !=
                             std::end(kGridNames) ||
                         std::find(std::begin(kBlockNames), std::end(kBlockNames), name) !=
                             std::end(kBlockNames);
    if (defined) continue;
    if (is_unroll_factor(name)) {
      if (params[i] != 0) out += fmt::format("constexpr int {} = {};\n", name, params[i]);
    } else {
      out += fmt::format("#define {} {}\n", name, params[i]);
    }
  }
  return out + "#define kernel_tuner 1\n";
}

// `text` without the pragmas "#pragma unroll NAME" of the unroll factors set to 0, as Kernel
// Tuner removes them (the line stays, empty, so line numbers stay).
std::string without_unroll_pragmas(const std::string& text, const SpecInstance& in) {
  std::string out = text;
  for (const std::string& name : in.unroll_removed) {
    const std::regex pragma("^([ \\t]*#[ \\t]*pragma[ \\t]+unroll[ \\t]+" + name + ")[ \\t]*$",
                            std::regex::multiline);
    out = std::regex_replace(out, pragma, "");
  }
  return out;
}

}  // namespace

SpecTask::SpecTask(KernelSpec spec)
    : spec_(std::move(spec)), space_(std::make_unique<ConfigSpace>()) {
  replay::define_t1_space(spec_.space, *space_);
  if (spec_.kernel_file_exists && spec_.kernel_error.empty()) source_ = spec_.read_kernel_source();
  if (spec_.launch == KernelSpec::Launch::kernel_tuner && spec_.block[0].parsed &&
      spec_.kernel_error.empty())
    warn_unused_local_size();
}

// A LocalSize that is not the block Kernel Tuner launches says what the author meant, and
// Kernel Tuner (and so cutune) does otherwise: one warning, on the reference configuration.
void SpecTask::warn_unused_local_size() {
  const std::vector<int64_t>& params = spec_.reference.configuration;
  const std::vector<int64_t> values = spec_.values_for(params);
  int64_t local[3], block[3], grid[3];
  try {
    for (int d = 0; d < 3; ++d)
      local[d] = eval_int(spec_.block[d], values, fmt::format("LocalSize.{}", kAxes[d]));
    kernel_tuner_launch(spec_, params, values, block, grid);
  } catch (const SpecError&) {
    return;  // instantiate() reports it
  }
  if (std::equal(local, local + 3, block)) return;
  spec_.warnings.push_back(fmt::format(
      "LocalSize is ({},{},{}) for the reference configuration, but Kernel Tuner launches blocks "
      "of ({},{},{}) (the parameters block_size_x/y/z, default 256,1,1); cutune does as Kernel "
      "Tuner does (\"CutuneLaunch\": \"GlobalSize\" launches LocalSize)",
      local[0], local[1], local[2], block[0], block[1], block[2]));
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
  if (spec_.launch == KernelSpec::Launch::kernel_tuner)
    kernel_tuner_launch(spec_, params, values, block, grid);
  else
    global_size_launch(spec_, values, block, grid);
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
    in.elements.push_back(n * a.lanes);
    in.fill_values.push_back(a.fill_expr ? a.fill_expr->parsed->evaluate(values) : a.fill_value);
  }
  in.defines = kernel_tuner_defines(spec_, params, in.launch.grid, in.launch.block);
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i] == 0 && is_unroll_factor(spec_.space.parameters[i].name))
      in.unroll_removed.push_back(spec_.space.parameters[i].name);
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

std::vector<std::string> SpecTask::compile_options() const {
  std::vector<std::string> out = spec_.compiler_options;
  // The kernel's folder, for the headers beside it (the compilers see the file under another
  // path).
  out.push_back("-I" + std::filesystem::absolute(spec_.kernel_file).parent_path().string());
  return out;
}

CudaSource SpecTask::nvrtc_source(const SpecInstance& in, const std::string& kernel_name,
                                  const std::string& file_source) const {
  CudaSource src;
  // A name expression (src/runtime/nvrtc_builder.h): a template is instantiated, a kernel of
  // C++ linkage found.
  src.kernel_name =
      kernel_name.empty() ? in.kernel_expression : kernel_expression(spec_, kernel_name, in.params);
  src.code = in.defines + fmt::format("#line 1 \"{}\"\n", spec_.kernel_file.filename().string()) +
             without_unroll_pragmas(file_source.empty() ? source() : file_source, in);
  src.launch = in.launch;
  src.compile_options = compile_options();
  for (size_t i = 0; i < spec_.arguments.size(); ++i)
    src.params.push_back(kernel_param(spec_.arguments[i], in.elements[i]));
  return src;
}

CudaSource SpecTask::emulator_source(const SpecInstance& in, const std::string& kernel_name,
                                     const std::string& file_source) const {
  CudaSource src;
  src.kernel_name = "cutune_spec_entry";
  src.launch = in.launch;
  src.compile_options = compile_options();
  const std::string user =
      without_unroll_pragmas(file_source.empty() ? source() : file_source, in);
  const std::string callee =
      kernel_name.empty() ? in.kernel_expression : kernel_expression(spec_, kernel_name, in.params);
  std::vector<std::string> params, call_args, copies;
  for (size_t i = 0; i < spec_.arguments.size(); ++i) {
    const SpecArgument& a = spec_.arguments[i];
    src.params.push_back(kernel_param(a, in.elements[i]));
    const std::string name = fmt::format("cutune_arg{}", i);
    const std::string type = arg_c_type(a);
    params.push_back(a.is_scalar ? fmt::format("{} {}", type, name)
                                 : fmt::format("{}* {}", type, name));
    // The call casts to the kernel's parameter type (a const or restrict pointer, a vector).
    call_args.push_back(name);
    if (a.is_constant)
      copies.push_back(
          fmt::format("    cutune_emu_fill_constant(&{0}, sizeof({0}), {1}, {2}ull, \"{0}\");\n",
                      a.name, name, in.elements[i] * elem_bytes(a.type)));
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
