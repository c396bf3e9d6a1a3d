// 160 sampled tensor-core convolution configurations compile with NVRTC for sm_90, with no
// failure the verifier did not predict: every configuration the verifier passes must compile.

#include <catch2/catch.hpp>

#include "kernels/layer_suites.h"
#include "kernels/template.h"
#include "src/runtime/nvrtc_builder.h"
#include "tests/tensor_core/conv_samples.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

std::vector<int64_t> resnet18_layer(const std::string& name) {
  for (const SuiteLayer& l : suite_layers("resnet18", 1)) {
    if (l.name == name) return l.shape;
  }
  FAIL("no ResNet-18 layer " << name);
  return {};
}

}  // namespace

TEST_CASE("40 conv2d_fp16_nhwc configurations on ResNet-18 C7 compile",
          "[tensor_core][conv][nvrtc]") {
  // 28x28, 128 -> 256 channels, 3x3, stride 2, pad 1.
  test::compile_sample("conv2d_fp16", "conv2d_fp16_nhwc", resnet18_layer("C7"), 40, 901);
}

TEST_CASE("40 conv2d_bf16_nhwc_out16 configurations on ResNet-18 C1 compile",
          "[tensor_core][conv][nvrtc]") {
  // 224x224, 3 -> 64 channels, 7x7, stride 2, pad 3: the input only in element copies.
  test::compile_sample("conv2d_bf16", "conv2d_bf16_nhwc_out16", resnet18_layer("C1"), 40, 902);
}

TEST_CASE("40 conv2d_bf16_nhwc configurations on a dilated odd shape compile",
          "[tensor_core][conv][nvrtc]") {
  test::compile_sample("conv2d_bf16", "conv2d_bf16_nhwc", test::kConvDilated, 40, 903);
}

TEST_CASE("40 conv2d_fp16_nhwc_out16 configurations with an odd K compile",
          "[tensor_core][conv][nvrtc]") {
  test::compile_sample("conv2d_fp16", "conv2d_fp16_nhwc_out16", test::kConvOddK, 40, 904);
}
