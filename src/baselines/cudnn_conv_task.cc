#include "src/baselines/cudnn_conv_task.h"

#include <algorithm>

#include "kernels/conv_shape.h"

namespace cutune {

namespace {

int tensor_index(const std::vector<TensorSpec>& tensors, const std::string& name) {
  auto it = std::find_if(tensors.begin(), tensors.end(),
                         [&](const TensorSpec& t) { return t.name == name; });
  return it == tensors.end() ? -1 : int(it - tensors.begin());
}

}  // namespace

std::optional<CudnnConvProblem> cudnn_conv_problem(const Template& tmpl) {
  ConvShape shape;
  CudnnConvProblem p;
  if (tmpl.op() == "conv2d" && tmpl.name() == "conv2d_nchw") {
    shape = conv2d_shape(tmpl.shape());
  } else if (tmpl.op() == "conv2d" && tmpl.name() == "conv2d_nhwc") {
    shape = conv2d_shape(tmpl.shape());
    p.layout = CudnnActivationLayout::nhwc;
    p.filter_layout = CudnnFilterLayout::rsck;
  } else if (tmpl.op() == "depthwise_conv2d") {
    shape = depthwise_shape(tmpl.shape());
    p.groups = shape.c;
  } else {
    return std::nullopt;
  }
  p.n = shape.n;
  p.c = shape.c;
  p.h = shape.h;
  p.w = shape.w;
  p.k = shape.k;
  p.r = shape.r;
  p.s = shape.s;
  p.stride = shape.stride;
  p.pad = shape.pad;
  p.dilation = shape.dilation;
  const std::vector<TensorSpec> tensors = tmpl.tensors();
  p.input = tensor_index(tensors, "Input");
  p.filter = tensor_index(tensors, "Filter");
  p.output = tensor_index(tensors, "Output");
  if (p.input < 0 || p.filter < 0 || p.output < 0) return std::nullopt;
  return p;
}

std::vector<std::string> cudnn_worker_args(const CudnnConvProblem& problem) {
  return {"--cudnn-conv", problem.to_json().dump()};
}

std::vector<std::string> worker_command_for(const Template& tmpl) {
  std::vector<std::string> command = {"/proc/self/exe", "__worker"};
  if (std::optional<CudnnConvProblem> p = cudnn_conv_problem(tmpl)) {
    const std::vector<std::string> extra = cudnn_worker_args(*p);
    command.insert(command.end(), extra.begin(), extra.end());
  }
  return command;
}

}  // namespace cutune
