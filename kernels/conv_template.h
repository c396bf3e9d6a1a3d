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

}  // namespace cutune
