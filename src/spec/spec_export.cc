#include "src/spec/spec_export.h"

#include <cctype>
#include <optional>

#include <fmt/format.h>

#include "src/export/export_manifest.h"
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
  NvrtcBuilder builder(build);
  const CompileResult c = builder.compile(src);
  if (!c.ok())
    throw SpecError(fmt::format("the best configuration does not compile for {}: {}", build.arch,
                                c.log.substr(0, c.log.find('\n'))));

  // The templates' export format (src/export/export_manifest.h): one kernel, loaded by the
  // symbol NVRTC lowered its name to (a C++ kernel's is mangled), the spec's parameters as the
  // configuration's knobs, its __constant__ arguments to fill before a launch.
  ExportedKernel k;
  k.name = file_stem(task.spec());
  k.symbol = c.kernel_name;
  k.task = {{"op", "spec"},
            {"shape", task.spec().problem_size},
            {"template", src.kernel_name},
            {"arch", build.arch},
            {"device", r.task.device_name},
            {"spec", task.spec().path.string()},
            {"compiler_options", task.spec().compiler_options}};
  nlohmann::json knobs = nlohmann::json::object();
  for (size_t i = 0; i < in.params.size(); ++i)
    knobs[task.spec().space.parameters[i].name] = in.params[i];
  k.config = {{"index", r.config_index}, {"knobs", knobs}};
  k.source = src;
  k.source.launch.static_smem_bytes = uint32_t(c.ptxas.shared_bytes);
  k.registers = c.ptxas.registers;
  k.time_s = r.result.median_s();
  for (size_t i = 0; i < task.spec().arguments.size(); ++i) {
    const SpecArgument& a = task.spec().arguments[i];
    if (a.is_constant)
      k.constants.push_back(
          {{"name", a.name}, {"type", elem_name(a.type)}, {"elements", in.elements[i]}});
  }
  try {
    write_export(out_dir, {{k, c.to_cubin()}});
  } catch (const std::runtime_error& e) {
    throw SpecError(e.what());
  }
  SpecExport out;
  out.cubin = out_dir / (k.name + ".cubin");
  out.source = out_dir / (k.name + ".cu");
  out.manifest = out_dir / "manifest.json";
  out.entry = manifest_entry(k);
  return out;
}

}  // namespace cutune::spec
