#include "src/export/export_log.h"

#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/template.h"
#include "src/base/errors.h"
#include "src/lower/lower.h"
#include "src/records/tuning_log.h"
#include "src/runtime/device.h"
#include "src/export/export_manifest.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/target/device_info.h"

namespace cutune {

namespace {

// The baseline the worker timed with this record (its median, extra.baseline_s), if any.
std::optional<double> baseline_time(const Record& r) {
  const std::optional<double> t = r.result.details.baseline.baseline_s;
  return t && std::isfinite(*t) ? t : std::nullopt;
}

std::optional<std::string> baseline_name(const Record& r) { return r.result.details.baseline.name; }

}  // namespace

ExportSummary export_log(const std::filesystem::path& log, const std::filesystem::path& out_dir) {
  const LogReadResult read = read_log(log);
  const std::vector<Record> best = best_records(read.records, 1);
  if (best.empty()) throw UserError(fmt::format("{} holds no ok record to export", log.string()));

  ExportSummary summary;
  std::vector<std::pair<ExportedKernel, Cubin>> kernels;
  std::map<std::string, NvrtcBuilder> builders;
  for (const Record& r : best) {
    const std::string task_text = r.task.to_string();
    try {
      auto tmpl = make_template(r.task.op, r.task.shape, r.task.template_name);
      const Config config = tmpl->space().get(r.config_index);
      const Lowered lowered = lower(*tmpl, config, verifier_limits(r.task.target_arch));
      if (!lowered.ok()) {
        std::string why =
            lowered.verify.errors.empty() ? lowered.build_error : lowered.verify.errors.front();
        summary.skipped.push_back(
            fmt::format("{}: config {} no longer lowers: {}", task_text, r.config_index, why));
        continue;
      }
      auto [it, fresh] = builders.try_emplace(
          r.task.target_arch, BuildOptions{.arch = r.task.target_arch, .extra_flags = {}});
      const CompileResult compiled = it->second.compile(*lowered.source);
      if (!compiled.ok()) {
        summary.skipped.push_back(
            fmt::format("{}: config {} does not compile", task_text, r.config_index));
        continue;
      }
      ExportedKernel k;
      k.name = export_name(tmpl->name(), r.task.shape, r.task.target_arch);
      k.task = {{"op", r.task.op},
                {"shape", r.task.shape},
                {"dtype", r.task.dtype},
                {"template", r.task.template_name},
                {"arch", r.task.target_arch},
                {"device", r.task.device_name}};
      k.config = {{"index", r.config_index}, {"knobs", r.knobs}};
      k.source = *lowered.source;
      k.registers = compiled.ptxas.registers;
      k.flops = tmpl->flops();
      k.time_s = r.result.median_s();
      k.baseline_s = baseline_time(r);
      k.baseline = baseline_name(r);
      for (const TensorSpec& t : tmpl->tensors()) {
        if (t.is_output && t.zero_init) k.zero_init.push_back(t.name);
        if (t.is_output && t.initial) k.initial.push_back(t.name);
      }
      // The fused epilogue's text: its extra parameters (bias, residual, alpha, beta) are
      // among the params by name.
      if (const std::string ep = template_params(tmpl->name()).epilogue; !ep.empty())
        k.task["epilogue"] = ep;
      summary.written.push_back(k.name);
      kernels.emplace_back(std::move(k), compiled.to_cubin());
    } catch (const TaskError& e) {
      summary.skipped.push_back(fmt::format("{}: {}", task_text, e.what()));
    } catch (const ConfigError& e) {
      summary.skipped.push_back(fmt::format("{}: {}", task_text, e.what()));
    }
  }
  if (kernels.empty()) {
    // A replay log, say: its tasks name no template that cutune can rebuild.
    throw UserError(fmt::format("{}: nothing to export: no task in it can be rebuilt ({})",
                                log.string(), summary.skipped.front()));
  }
  write_export(out_dir, kernels);
  return summary;
}

}  // namespace cutune
