#include "src/baselines/cudnn_conv_task.h"

namespace cutune {

std::optional<CudnnConvProblem> cudnn_conv_problem(const BaselineSpec& baseline) {
  if (baseline.kind != BaselineSpec::Kind::conv) return std::nullopt;
  const ConvBaseline& b = baseline.conv;
  const ConvShape& shape = b.shape;
  CudnnConvProblem p;
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
  p.groups = shape.depthwise ? shape.c : 1;
  if (b.layout == ConvLayout::nhwc) {
    p.layout = CudnnActivationLayout::nhwc;
    p.filter_layout = CudnnFilterLayout::rsck;
  }
  p.dtype = b.input == ir::DType::Float16    ? "float16"
            : b.input == ir::DType::BFloat16 ? "bfloat16"
                                             : "float32";
  p.input = b.input_tensor;
  p.filter = b.filter_tensor;
  p.output = b.output_tensor;
  return p;
}

}  // namespace cutune
