#pragma once
// From a task's declared baseline (kernels/baseline_spec.h) to the cuDNN problem that computes
// it: the layouts, the group count of a depthwise convolution, the storage type and the tensor
// indices. The template says what it computes; this is the one place that knows how cuDNN
// spells it.

#include <optional>

#include "kernels/baseline_spec.h"
#include "kernels/template.h"
#include "src/baselines/cudnn_conv.h"

namespace cutune {

// The cuDNN problem of a convolution baseline, else nullopt.
std::optional<CudnnConvProblem> cudnn_conv_problem(const BaselineSpec& baseline);
inline std::optional<CudnnConvProblem> cudnn_conv_problem(const Template& tmpl) {
  return cudnn_conv_problem(tmpl.baseline());
}

}  // namespace cutune
