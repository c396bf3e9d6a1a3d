#include "src/spec/spec_export.h"

#include <cctype>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "src/records/tuning_log.h"
#include "src/runtime/nvrtc_builder.h"

namespace cutune::spec {

namespace {

// The record's parameter values in the spec's order, or nullopt when its knobs are not exactly
// the spec's parameters with listed values.
std::optional<std::vector<int64_t>> params_of(const SpecTask& task, const Record& r) {
  const auto& parameters = task.spec().space.parameters;
  if (!r.knobs.is_object() || r.knobs.size() != parameters.size()) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& p : parameters) {
    auto it = r.knobs.find(p.name);
    if (it == r.knobs.end() || !it->is_number_integer()) return std::nullopt;
    out.push_back(it->get<int64_t>());
  }
  try {
    task.config_of(out);
  } catch (const SpecError&) {
    return std::nullopt;
  }
  return out;
}

void write_file(const std::filesystem::path& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(bytes));
  if (!out) throw SpecError(fmt::format("cannot write '{}'", path.string()));
}

std::string file_stem(const KernelSpec& s) {
  std::string name = s.benchmark_name.empty() ? s.kernel_name : s.benchmark_name;
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) c = '_';
  return name;
}

}  // namespace

SpecExport export_spec_best(const SpecTask& task, const std::vector<Record>& records,
                            const std::filesystem::path& out_dir, const std::string& arch) {
  std::vector<Record> fitting;
  for (const Record& r : records)
    if (r.result.ok() && params_of(task, r)) fitting.push_back(r);
  const std::vector<Record> best = best_records(fitting, 1);
  if (best.empty())
    throw SpecError(
        fmt::format("the log has no ok record whose configuration is one of {}'s (parameters {})",
                    task.spec().path.filename().string(), task.spec().space.parameters.size()));
  const Record& r = best.front();
  const SpecInstance in = task.instantiate(*params_of(task, r));
  const CudaSource src = task.nvrtc_source(in);
  BuildOptions build;
  build.arch = !arch.empty()                             ? arch
               : r.task.target_arch.rfind("sm_", 0) == 0 ? r.task.target_arch
                                                         : "sm_90";
  build.extra_flags = task.spec().compiler_options;
  NvrtcBuilder builder(build);
  const CompileResult c = builder.compile(src);
  if (!c.ok())
    throw SpecError(fmt::format("the best configuration does not compile for {}: {}", build.arch,
                                c.log.substr(0, c.log.find('\n'))));

  std::filesystem::create_directories(out_dir);
  SpecExport out;
  const std::string stem = file_stem(task.spec());
  out.cubin = out_dir / (stem + ".cubin");
  out.source = out_dir / (stem + ".cu");
  out.manifest = out_dir / "manifest.json";
  write_file(out.cubin, c.cubin.data(), c.cubin.size());
  write_file(out.source, src.code.data(), src.code.size());

  nlohmann::ordered_json defines = nlohmann::ordered_json::object();
  for (size_t i = 0; i < in.params.size(); ++i)
    defines[task.spec().space.parameters[i].name] = in.params[i];
  nlohmann::ordered_json args = nlohmann::ordered_json::array();
  for (size_t i = 0; i < task.spec().arguments.size(); ++i) {
    const SpecArgument& a = task.spec().arguments[i];
    args.push_back({{"name", a.name},
                    {"type", elem_name(a.type)},
                    {"kind", a.is_scalar     ? "scalar"
                             : a.is_constant ? "constant"
                                             : "buffer"},
                    {"elements", in.elements[i]},
                    {"output", a.is_output}});
  }
  const LaunchSpec& l = in.launch;
  nlohmann::ordered_json& m = out.manifest_json;
  m["spec"] = task.spec().path.string();
  m["task"] = r.task.to_string();
  m["kernel"] = src.kernel_name;
  m["symbol"] = c.kernel_name;
  m["arch"] = build.arch;
  m["cubin"] = out.cubin.filename().string();
  m["source"] = out.source.filename().string();
  m["config_index"] = r.config_index;
  m["defines"] = defines;
  m["compiler_options"] = task.spec().compiler_options;
  m["grid"] = {l.grid.x, l.grid.y, l.grid.z};
  m["block"] = {l.block.x, l.block.y, l.block.z};
  m["dynamic_smem_bytes"] = l.dynamic_smem_bytes;
  m["static_smem_bytes"] = c.ptxas.shared_bytes;
  m["registers"] = c.ptxas.registers;
  m["arguments"] = args;  // kernel parameters: the non-constant ones, in order
  m["time_ms"] = r.result.median_s() * 1e3;
  m["measured_on"] = r.task.device_name;
  const std::string text = m.dump(1) + "\n";
  write_file(out.manifest, text.data(), text.size());
  return out;
}

}  // namespace cutune::spec
