// cutune ops | space | show: what the operators, templates and spaces are (space and show
// also of a --spec kernel: cmd_spec.cc).

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "src/cli/cli_common.h"
#include "src/cli/cmd_spec.h"
#include "src/ir/ir_printer.h"
#include "src/lower/lower.h"

namespace cutune::cli {

namespace {

nlohmann::json params_json(const TaskParams& p) {
  return {{"computation", p.computation},
          {"dtype", p.dtype},
          {"out_dtype", p.out_dtype},
          {"layout", p.layout},
          {"family", p.family}};
}

// By computation: each template with the task parameters that name it (--dtype, --out-dtype,
// --layout, --family) and the operator name of before that it belongs to.
void run_ops(bool json) {
  std::vector<OpInfo> ops = list_ops();
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const OpInfo& o : ops) {
      nlohmann::json params = nlohmann::json::object();
      for (const std::string& t : o.templates) params[t] = params_json(template_params(t));
      const TaskParams& d = template_params(o.templates.front());
      nlohmann::json j = {{"op", o.op},
                          {"computation", d.computation},
                          {"dtype", d.dtype},
                          {"templates", o.templates},
                          {"params", params},
                          {"default", o.templates.front()},
                          {"shape", o.shape_help},
                          {"description", o.description}};
      if (!o.sm90_default.empty()) j["default_sm90"] = o.sm90_default;
      out.push_back(std::move(j));
    }
    print_json(out);
    return;
  }
  std::vector<std::string> computations;
  for (const OpInfo& o : ops) {
    const std::string& c = template_params(o.templates.front()).computation;
    if (std::find(computations.begin(), computations.end(), c) == computations.end())
      computations.push_back(c);
  }
  for (const std::string& c : computations) {
    bool first = true;
    for (const OpInfo& o : ops) {
      if (template_params(o.templates.front()).computation != c) continue;
      if (first) {
        fmt::print("{} --shape {}\n  {:<6} {:<11} {:<8} {:<8} {:<30} {}\n", c, o.shape_help,
                   "--dtype", "--out-dtype", "--layout", "--family", "template", "operator");
        first = false;
      }
      for (const std::string& t : o.templates) {
        const TaskParams& p = template_params(t);
        std::string note;
        if (t == o.templates.front()) note = o.sm90_default.empty() ? ", default" : ", default off sm_90";
        if (t == o.sm90_default) note = ", default on sm_90";
        fmt::print("  {:<7} {:<11} {:<8} {:<8} {:<30} {}{}\n", p.dtype, p.out_dtype, p.layout,
                   p.family, t, o.op, note);
      }
    }
    for (const OpInfo& o : ops) {
      if (template_params(o.templates.front()).computation == c)
        fmt::print("  {}: {}\n", o.op, o.description);
    }
  }
}

std::string domain_text(const Knob& k) {
  std::string s;
  if (k.kind() == KnobKind::split) {
    return fmt::format("split of {} into {} factors", k.extent(), k.parts());
  }
  for (int64_t v : k.values()) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return "{" + s + "}";
}

void run_space(const TaskOptions& opts) {
  auto tmpl = opts.make();
  const ConfigSpace& space = tmpl->space();
  std::optional<uint64_t> valid = space.count_valid(50'000'000);
  if (opts.json) {
    nlohmann::json out = space.describe();
    out["template"] = tmpl->name();
    out["shape"] = tmpl->shape();
    out["size"] = space.size();
    out["valid"] = valid ? nlohmann::json(*valid) : nlohmann::json(nullptr);
    print_json(out);
    return;
  }
  fmt::print("template {} for shape {}\n", tmpl->name(), opts.shape);
  for (const Knob& k : space.knobs()) {
    fmt::print("  {:<14} {:>4} choices  {}\n", k.name(), k.cardinality(), domain_text(k));
  }
  fmt::print("space size: {} configurations", space.size());
  if (valid) fmt::print(", {} satisfy the constraints", *valid);
  fmt::print("\n");
}

void run_show(const TaskOptions& opts, const std::string& config_text) {
  auto tmpl = opts.make();
  Config config = parse_config(tmpl->space(), config_text);
  Lowered l = lower(*tmpl, config, opts.limits());
  std::optional<std::string> violation = tmpl->space().violation(config);
  if (opts.json) {
    nlohmann::json out;
    out["config"] = config.to_json();
    out["constraint_violation"] = violation ? nlohmann::json(*violation) : nlohmann::json(nullptr);
    out["verifier_errors"] = l.verify.errors;
    if (l.kernel.body.defined()) out["ir"] = ir::to_string(l.kernel);
    if (l.source) {
      out["cuda"] = l.source->code;
      out["kernel_name"] = l.source->kernel_name;
      const LaunchSpec& ls = l.source->launch;
      out["launch"] = {{"grid", {ls.grid.x, ls.grid.y, ls.grid.z}},
                       {"block", {ls.block.x, ls.block.y, ls.block.z}},
                       {"static_smem_bytes", ls.static_smem_bytes},
                       {"dynamic_smem_bytes", ls.dynamic_smem_bytes}};
    }
    print_json(out);
    return;
  }
  fmt::print("// configuration {}: {}\n", config.index(), config.to_string());
  if (violation) fmt::print("// violates constraint: {}\n", *violation);
  for (const std::string& e : l.verify.errors) fmt::print("// verifier: {}\n", e);
  if (l.kernel.body.defined()) {
    fmt::print("\n/* IR\n{}*/\n\n", ir::to_string(l.kernel));
  }
  if (l.source) {
    const LaunchSpec& ls = l.source->launch;
    fmt::print(
        "// launch: grid ({}, {}, {}), block ({}, {}, {}), shared {} B static + {} B dynamic\n",
        ls.grid.x, ls.grid.y, ls.grid.z, ls.block.x, ls.block.y, ls.block.z, ls.static_smem_bytes,
        ls.dynamic_smem_bytes);
    fmt::print("{}", l.source->code);
  }
}

}  // namespace

void add_inspect_commands(CLI::App& app) {
  auto* ops = app.add_subcommand("ops", "list operators and their schedule templates");
  auto ops_json = std::make_shared<bool>(false);
  ops->add_flag("--json", *ops_json, "machine-readable output");
  ops->callback([ops_json] { run_ops(*ops_json); });

  auto* space = app.add_subcommand(
      "space", "show a template's knobs (or a --spec kernel's parameters) and the size of its space");
  auto space_opts = std::make_shared<TaskOrSpec>();
  space_opts->add_to(*space, false);
  space->callback([space_opts] {
    if (space_opts->wants_spec())
      spec_form::run_space(space_opts->spec());
    else
      run_space(space_opts->task);
  });

  auto* show = app.add_subcommand(
      "show", "print one configuration's IR and CUDA source (with --spec: its defines and launch)");
  auto show_opts = std::make_shared<TaskOrSpec>();
  auto config = std::make_shared<std::string>();
  show_opts->add_to(*show);
  show->add_option("--config", *config, "configuration index or JSON")->required();
  show->callback([show_opts, config] {
    if (show_opts->wants_spec())
      spec_form::run_show(show_opts->spec(), *config);
    else
      run_show(show_opts->task, *config);
  });
}

}  // namespace cutune::cli
