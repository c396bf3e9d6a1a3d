#include "src/export/export_table.h"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/template.h"
#include "src/base/errors.h"
#include "src/export/export_manifest.h"
#include "src/lower/lower.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/target/device_info.h"

namespace cutune {

ExportSummary export_table(const std::filesystem::path& path,
                           const std::filesystem::path& out_dir) {
  const std::string where = path.string();
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("cannot read the dispatch table {}", where));
  nlohmann::json t;
  try {
    t = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not JSON: {}", where, e.what()));
  }
  ExportSummary summary;
  std::vector<std::pair<ExportedKernel, Cubin>> kernels;
  nlohmann::json rows = nlohmann::json::array();
  try {
    const std::string op = t.at("op"), name = t.at("template"), arch = t.at("arch");
    const int64_t n = t.at("n"), k = t.at("k");
    BuildOptions options;
    options.arch = arch;
    NvrtcBuilder builder(options);
    for (const nlohmann::json& row : t.at("table")) {
      const int64_t lo = row.at("m_lo"), hi = row.at("m_hi"), at = row.at("m_tuned");
      // A configuration that serves two intervals is one kernel.
      std::string kernel;
      for (const auto& [done, cubin] : kernels)
        if (done.config["knobs"] == row.at("knobs")) kernel = done.name;
      if (kernel.empty()) {
        auto tmpl = make_template(op, {at, n, k}, name);
        if (!tmpl->runtime_m())
          throw UserError(fmt::format("{}: template {} has no run-time M", where, name));
        const Config config = tmpl->space().from_json({{"knobs", row.at("knobs")}});
        const Lowered lowered = lower(*tmpl, config, verifier_limits(arch));
        if (!lowered.ok()) {
          throw UserError(fmt::format(
              "{}: the kernel of M {}..{} no longer lowers: {}", where, lo, hi,
              lowered.verify.errors.empty() ? lowered.build_error : lowered.verify.errors.front()));
        }
        const CompileResult compiled = builder.compile(*lowered.source);
        if (!compiled.ok())
          throw UserError(
              fmt::format("{}: the kernel of M {}..{} does not compile", where, lo, hi));
        ExportedKernel e;
        e.name = export_name(fmt::format("{}_M{}_{}", name, lo, hi), {n, k}, arch);
        e.task = {{"op", op},
                  {"shape", {at, n, k}},
                  {"template", name},
                  {"arch", arch},
                  {"device", t.value("device", "")}};
        e.config = {{"index", config.index()}, {"knobs", row.at("knobs")}};
        e.source = *lowered.source;
        e.registers = compiled.ptxas.registers;
        e.flops = tmpl->flops();
        e.time_s = row.value("time_ms", 0.0) * 1e-3;
        for (const TensorSpec& s : tmpl->tensors())
          if (s.is_output && s.zero_init) e.zero_init.push_back(s.name);
        kernel = e.name;
        summary.written.push_back(e.name);
        kernels.emplace_back(std::move(e), compiled.to_cubin());
      }
      rows.push_back({{"m_lo", lo}, {"m_hi", hi}, {"kernel", kernel}});
    }
    if (kernels.empty()) throw UserError(fmt::format("{}: the dispatch table is empty", where));
    write_export(out_dir, kernels,
                 {{"op", op}, {"template", name}, {"n", n}, {"k", k}, {"table", rows}});
  } catch (const nlohmann::json::exception& e) {
    throw UserError(
        fmt::format("{}: not a dispatch table of cutune tune --table: {}", where, e.what()));
  } catch (const ConfigError& e) {
    throw UserError(fmt::format("{}: {}", where, e.what()));
  }
  return summary;
}

}  // namespace cutune
