#pragma once
// Named lists of real network layers to tune one after another (a "suite").
//
// resnet18: the twelve distinct conv2d layers of ResNet-18 on 224×224 ImageNet inputs, named
//   C1–C12 as in the AutoTVM paper (Chen et al., NeurIPS 2018, Table 1, from the TVM paper's
//   Table 2): conv2d shapes N,C,H,W,K,R,S,stride,pad,dilation with "same" padding (pad = R/2).
// mobilenet: the depthwise layers of MobileNet v1 (Howard et al., 2017, Table 1) on 224×224
//   inputs, 3×3 with stride 1 or 2 and pad 1, named D1–D9; D7 stands for the five identical
//   14×14×512 stride-1 layers (repeat = 5).
// resnet50: ResNet-50 v1.5's 23 distinct convolutions (R1-R23), each with its repeat in the
//   network (53 convolutions, the projection shortcuts included).
// mobilenet_v2: MobileNet v2's stem, 1x1 expansions and projections as conv2d (P0-P19) and its
//   3x3 depthwise layers (W1-W10), with repeats (52 layers).
// Every suite is given for any batch size (the benchmarks use 1, 16 and 32). The repeats make
// a network's summed time; ResNet-18's table is AutoTVM's (each layer once).

#include <cstdint>
#include <string>
#include <vector>

namespace cutune {

struct SuiteLayer {
  std::string name;            // "C1"
  std::string op;              // "conv2d" or "depthwise_conv2d"
  std::vector<int64_t> shape;  // as make_template takes it, every parameter given
  int repeat = 1;              // how many times the network runs this layer
  std::string description;     // "224x224, 3->64, 7x7, stride 2"
  // Task parameters the layer fixes (kernels/gemm_suites.h); empty: the operator's default,
  // the suite's --dtype, no epilogue.
  std::string layout, dtype, epilogue;
};

struct SuiteInfo {
  std::string name;
  std::string description;
};

std::vector<SuiteInfo> list_suites();

// The layers of `suite` at batch size `batch`; TaskError for an unknown suite (the message
// lists the known ones) or batch < 1.
std::vector<SuiteLayer> suite_layers(const std::string& suite, int64_t batch = 1);

// The operator that tunes `layer` with inputs of type `dtype` (the layer's own where it fixes
// one): "fp32" the layer's own op; "fp16" / "bf16" the tensor-core operators: conv2d_fp16 /
// conv2d_bf16 (NHWC, mma.sync and wgmma templates, conv2d_tc.h and conv2d_wgmma.h) for conv2d
// layers, gemm_fp16 / gemm_bf16 for GEMM layers. TaskError for another dtype (fp8: not yet), or
// a 16-bit type for a depthwise layer (no tensor-core template takes one).
std::string suite_layer_op(const SuiteLayer& layer, const std::string& dtype);

}  // namespace cutune
