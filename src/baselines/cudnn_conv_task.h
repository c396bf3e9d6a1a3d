#pragma once
// The bridge from a convolution template to cuDNN: the CudnnConvProblem of a conv2d or
// depthwise_conv2d task, and the worker command line that hands it to the measuring worker
// (which then checks every candidate against cuDNN's output and times cuDNN in the same
// harness; see worker_gpu.h). Lives beside the runtime because it is the one place that knows
// both the templates' tensor conventions (kernels/conv_shape.h) and cuDNN's.

#include <optional>
#include <string>
#include <vector>

#include "kernels/template.h"
#include "src/baselines/cudnn_conv.h"

namespace cutune {

// The problem of `tmpl` when it is a convolution cuDNN can compute (op conv2d with template
// conv2d_nchw or conv2d_nhwc, or depthwise_conv2d), else nullopt. Tensors are found by their
// names (Input, Filter, Output).
std::optional<CudnnConvProblem> cudnn_conv_problem(const Template& tmpl);

// The flag and its value that make `cutune __worker` (or any binary calling
// gpu_worker_main) use cuDNN for `problem`: {"--cudnn-conv", "<json>"}.
std::vector<std::string> cudnn_worker_args(const CudnnConvProblem& problem);

// The cutune binary's worker command for a task: {"/proc/self/exe", "__worker"} plus the
// cuDNN arguments for a convolution.
std::vector<std::string> worker_command_for(const Template& tmpl);

}  // namespace cutune
