// cutune ops | space | show: what the operators, templates and spaces are (space and show
// also of a --spec kernel: cmd_spec.cc).

#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/cli/cli_common.h"
#include "src/cli/cmd_spec.h"
#include "src/ir/ir_printer.h"
#include "src/lower/lower.h"

namespace cutune::cli {

namespace {

// "default", "default off sm_90", "default on sm_90" or "" for one combination.
std::string default_note(const TaskParams& p) {
  const bool elsewhere = default_params(p.computation, p.dtype) == p;
  const bool hopper = default_params(p.computation, p.dtype, "sm_90") == p;
  if (elsewhere && hopper) return "default";
  return elsewhere ? "default off sm_90" : hopper ? "default on sm_90" : "";
}

// By computation, its schedule families, and for each the combinations of task parameters it
// supports (--dtype, --out-dtype, --layout) with the template name that logs record.
void run_ops(bool json) {
  const std::vector<const TemplateFamily*> families = template_families();
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const TemplateFamily* f : families) {
      if (out.empty() || out.back()["computation"] != f->computation) {
        out.push_back({{"computation", f->computation},
                       {"shape", f->shape_help},
                       {"families", nlohmann::json::array()}});
      }
      nlohmann::json supported = nlohmann::json::array();
      for (const TaskParams& p : f->supported) {
        nlohmann::json c = {{"dtype", p.dtype},
                            {"out_dtype", p.out_dtype},
                            {"layout", p.layout},
                            {"template", template_name(p)},
                            {"operator", operator_name(p)}};
        if (const std::string note = default_note(p); !note.empty()) c["default"] = note;
        supported.push_back(std::move(c));
      }
      nlohmann::json j = {{"family", f->family},
                          {"description", f->description},
                          {"supported", std::move(supported)}};
      if (!f->native_arch.empty()) j["native_arch"] = f->native_arch;
      out.back()["families"].push_back(std::move(j));
    }
    print_json(out);
    return;
  }
  std::string computation;
  for (const TemplateFamily* f : families) {
    if (f->computation != computation) {
      computation = f->computation;
      fmt::print("{} --shape {}\n", computation, f->shape_help);
    }
    fmt::print("  --family {}: {}{}\n", f->family, f->description,
               f->native_arch.empty() ? "" : fmt::format(" (the default on {})", f->native_arch));
    fmt::print("    {:<7} {:<11} {:<8} {}\n", "--dtype", "--out-dtype", "--layout", "template");
    for (const TaskParams& p : f->supported) {
      const std::string note = default_note(p);
      const std::string name =
          note.empty() ? template_name(p) : fmt::format("{:<30} {}", template_name(p), note);
      fmt::print("    {:<7} {:<11} {:<8} {}\n", p.dtype, p.out_dtype, p.layout, name);
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
  const std::vector<Config> references = tmpl->reference_configs();
  if (opts.json) {
    nlohmann::json out = space.describe();
    out["template"] = tmpl->name();
    out["shape"] = tmpl->shape();
    out["size"] = space.size();
    out["valid"] = valid ? nlohmann::json(*valid) : nlohmann::json(nullptr);
    // The configurations the template's author measured first (the xgb tuner's seeds), so
    // that a script can time them by index without naming indices that change with the space.
    out["references"] = nlohmann::json::array();
    for (const Config& c : references) {
      out["references"].push_back({{"index", c.index()}, {"knobs", c.to_json()["knobs"]}});
    }
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
  if (references.empty()) {
    fmt::print("no reference configurations for this shape\n");
  } else {
    std::vector<uint64_t> indices;
    for (const Config& c : references) indices.push_back(c.index());
    fmt::print("reference configurations (cutune show --config INDEX): {}\n",
               fmt::join(indices, ", "));
  }
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
  auto* ops = app.add_subcommand(
      "ops",
      "list the computations, their schedule families and the task parameters each supports");
  auto ops_json = std::make_shared<bool>(false);
  ops->add_flag("--json", *ops_json, "machine-readable output");
  ops->callback([ops_json] { run_ops(*ops_json); });

  auto* space = app.add_subcommand(
      "space",
      "show a template's knobs (or a --spec kernel's parameters) and the size of its space");
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
