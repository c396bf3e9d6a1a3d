#pragma once
// Lowering: one configuration of a schedule template, through the template's IR, the
// simplifier and the verifier, to CUDA C. The step between a template (which knows nothing
// of CUDA C) and the compiler.

#include <optional>
#include <string>

#include "kernels/template.h"
#include "src/codegen/cuda_source.h"
#include "src/ir/ir.h"
#include "src/ir/verify.h"

namespace cutune {

// What lowering one configuration produces: the simplified IR, the verifier's verdict, and
// the CUDA source when the verifier accepted it.
struct Lowered {
  ir::Kernel kernel;
  ir::VerifyResult verify;
  std::optional<CudaSource> source;
  std::string build_error;  // the template could not build this configuration
  bool ok() const { return source.has_value(); }
};

Lowered lower(const Template& tmpl, const Config& config, const ir::TargetLimits& limits);

}  // namespace cutune
