// cutune sass: one configuration's machine code as the GPU would run it: registers, spills,
// shared memory and the main loop's instruction mix (see src/sass/).

#include <iostream>

#include <fmt/format.h>

#include "src/cli/cli_common.h"
#include "src/lower/lower.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/sass/disassembler.h"
#include "src/sass/sass_report.h"

namespace cutune::cli {

namespace {

struct SassArgs {
  TaskOptions task;
  std::string config;  // empty: the template's first reference configuration
};

void run_sass(const SassArgs& args) {
  auto tmpl = args.task.make();
  const ir::TargetLimits limits = args.task.limits();
  // Before any compiling: without the disassembler there is nothing to report.
  require_disassembler();
  Config config = [&] {
    if (!args.config.empty()) return parse_config(tmpl->space(), args.config);
    std::vector<Config> refs = tmpl->reference_configs();
    if (refs.empty())
      throw UsageError(
          fmt::format("{} has no reference configuration for this shape; "
                      "name one with --config",
                      tmpl->name()));
    return refs.front();
  }();
  Lowered l = lower(*tmpl, config, limits);
  if (!l.ok()) {
    std::string why = l.build_error;
    if (why.empty() && !l.verify.errors.empty()) why = l.verify.errors.front();
    throw UsageError(fmt::format("configuration {} is rejected: {}", config.index(), why));
  }
  BuildOptions build;
  build.arch = limits.arch;
  NvrtcBuilder builder(build);
  CompileResult compiled = builder.compile(*l.source);
  if (!compiled.ok()) {
    std::cerr << compiled.log << "\n";
    throw UsageError(
        fmt::format("configuration {} does not compile for {}", config.index(), limits.arch));
  }
  sass::SassReport report = sass::inspect(compiled, l.source->launch);
  if (args.task.json) {
    nlohmann::json j = report.to_json();
    j["template"] = tmpl->name();
    j["shape"] = tmpl->shape();
    j["arch"] = limits.arch;
    j["config"] = config.to_json();
    j["config_index"] = config.index();
    print_json(j);
    return;
  }
  fmt::print("{} {} for {}, configuration {}: {}\n", tmpl->name(), args.task.shape, limits.arch,
             config.index(), config.to_string());
  fmt::print("{}", report.to_text());
}

}  // namespace

void require_disassembler() {
  const sass::DisassemblerLookup& tool = sass::find_nvdisasm();
  if (!tool.found()) throw UsageError(tool.error());
}

nlohmann::json sass_json(const CompileResult& compiled, const LaunchSpec& launch) {
  try {
    return sass::inspect(compiled, launch).to_json();
  } catch (const std::runtime_error& e) {
    return {{"error", e.what()}};
  }
}

void add_sass_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sass", "disassemble one configuration: registers, spills, main-loop instruction mix");
  auto args = std::make_shared<SassArgs>();
  args->task.add_to(*cmd);
  cmd->add_option("--config", args->config,
                  "configuration index or JSON (default: the first reference configuration)");
  cmd->callback([args] { run_sass(*args); });
}

}  // namespace cutune::cli
