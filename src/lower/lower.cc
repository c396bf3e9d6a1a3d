#include "src/lower/lower.h"

#include "src/codegen/codegen_cuda.h"
#include "src/codegen/launch_grid.h"
#include "src/ir/simplify.h"

namespace cutune {

Lowered lower(const Template& tmpl, const Config& config, const ir::TargetLimits& limits) {
  Lowered out;
  try {
    out.kernel = ir::simplify(tmpl.build(config));
  } catch (const ir::IRError& e) {
    out.build_error = e.what();
    out.verify.errors.push_back(std::string("template could not build it: ") + e.what());
    return out;
  }
  out.verify = ir::verify(out.kernel, limits);
  if (!out.verify.ok()) return out;
  out.source = generate_cuda(out.kernel, out.verify.launch);
  if (tmpl.runtime_m()) {
    // The kernel was built with the grid of the task's M; the rule says how it follows M.
    const Template::MRule rule = tmpl.runtime_m_rule(config);
    CUTUNE_CHECK(rule.rows > 0 && rule.row_blocks > 0 && rule.axis < 2,
                 tmpl.name() + ": a run-time M without its launch rule");
    LaunchSpec& launch = out.source->launch;
    launch.m_axis = rule.axis;
    launch.m_rows = rule.rows;
    launch.m_row_blocks = rule.row_blocks;
    for (const auto& [name, per_row] : rule.row_elements) {
      for (KernelParam& p : out.source->params) {
        const bool map_of = p.tensor_map && p.tensor_map->buffer == name;
        if (p.name == name || map_of) p.m_row_elements = per_row;
      }
    }
    CUTUNE_CHECK(m_grid_extent(launch, *tmpl.runtime_m()) ==
                     (rule.axis == 0 ? launch.grid.x : launch.grid.y),
                 tmpl.name() + ": the run-time M's launch rule disagrees with the kernel's grid");
  }
  return out;
}

}  // namespace cutune
