#pragma once
// What the fp32 convolution templates (conv2d_nchw, conv2d_nhwc, depthwise_conv2d_nchw) share:
// the task's ConvShape, the knob space, and the overrides that follow from the shape and the
// data layout alone. Each tensor is f32; the kernel's parameters are Output, Input, Filter,
// laid out as `layout` says (conv_shape.h).

#include "kernels/conv_shape.h"
#include "kernels/template.h"

namespace cutune {

class ConvTemplate : public Template {
 public:
  std::vector<int64_t> shape() const override { return shape_.to_vector(); }
  const ConfigSpace& space() const override { return space_; }
  std::vector<TensorSpec> tensors() const override {
    return {{"Output", ir::Type::f32(), shape_.output_elements(), true},
            {"Input", ir::Type::f32(), shape_.input_elements(), false},
            {"Filter", ir::Type::f32(), shape_.filter_elements(), false}};
  }
  void reference(std::vector<std::vector<float>>& tensors) const override {
    conv_reference(shape_, layout_, tensors[1], tensors[2], tensors[0]);
  }
  double flops() const override { return shape_.flops(); }
  int64_t reduction_length() const override { return shape_.reduction_length(); }
  BaselineSpec baseline() const override { return BaselineSpec::of(ConvBaseline{shape_, layout_}); }

  const ConvShape& conv_shape() const { return shape_; }

 protected:
  ConvTemplate(const ConvShape& shape, ConvLayout layout) : shape_(shape), layout_(layout) {}

  ConvShape shape_;
  ConvLayout layout_;
  ConfigSpace space_;
};

// What the 16-bit-input implicit-GEMM convolutions (conv2d_tc.h on mma.sync, conv2d_wgmma.h on
// wgmma) share: the operator (conv2d_fp16 or conv2d_bf16), the shape (a conv2d, not a depthwise
// one), the tensors Output [N,P,Q,K] (fp32, zeroed for split-K, or the input type when out16),
// Input [N,H,W,C] and Filter [R,S,C,K] in the input type, the CPU reference (inputs taken as
// given: the caller has rounded them to the input type), the cuDNN baseline, and the GEMM's
// extents: M = N·P·Q output pixels, N = K channels, K = R·S·C.
class Conv16Template : public Template {
 public:
  std::string op() const override;
  std::vector<int64_t> shape() const override { return shape_.to_vector(); }
  const ConfigSpace& space() const override { return space_; }
  std::vector<TensorSpec> tensors() const override;
  void reference(std::vector<std::vector<float>>& tensors) const override;
  double flops() const override { return shape_.flops(); }
  int64_t reduction_length() const override { return shape_.reduction_length(); }
  BaselineSpec baseline() const override {
    return BaselineSpec::of(
        ConvBaseline{shape_, ConvLayout::nhwc, input_, out16_ ? input_ : ir::DType::Float32});
  }

  const ConvShape& conv_shape() const { return shape_; }
  int64_t gemm_m() const { return shape_.n * shape_.p * shape_.q; }
  int64_t gemm_k() const { return shape_.r * shape_.s * shape_.c; }

 protected:
  // input: Float16 or BFloat16, else TaskError naming `kind` ("a tensor-core convolution").
  Conv16Template(const ConvShape& shape, ir::DType input, bool out16, const char* kind);

  ConvShape shape_;
  ir::DType input_;
  bool out16_;
  ConfigSpace space_;
};

}  // namespace cutune
