#include "src/lower/lower.h"

#include "src/codegen/codegen_cuda.h"
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
  if (out.verify.ok()) out.source = generate_cuda(out.kernel, out.verify.launch);
  return out;
}

}  // namespace cutune
