#include "kernels/layer_suites.h"

#include <iterator>

#include <fmt/format.h>

#include "kernels/template.h"

namespace cutune {

namespace {

// One conv2d layer on a square input: size, in and out channels, filter, stride; pad R/2.
struct ConvRow {
  const char* name;
  int64_t size, c, k, r, stride;
};

constexpr ConvRow kResnet18[] = {
    {"C1", 224, 3, 64, 7, 2},    {"C2", 56, 64, 64, 3, 1},    {"C3", 56, 64, 64, 1, 1},
    {"C4", 56, 64, 128, 3, 2},   {"C5", 56, 64, 128, 1, 2},   {"C6", 28, 128, 128, 3, 1},
    {"C7", 28, 128, 256, 3, 2},  {"C8", 28, 128, 256, 1, 2},  {"C9", 14, 256, 256, 3, 1},
    {"C10", 14, 256, 512, 3, 2}, {"C11", 14, 256, 512, 1, 2}, {"C12", 7, 512, 512, 3, 1},
};

// ResNet-50 (v1.5: the stride of a downsampling block on its 3x3), its 23 distinct
// convolutions with how often the network runs each (53 in all, the 4 projection shortcuts
// included).
constexpr ConvRow kResnet50[] = {
    {"R1", 224, 3, 64, 7, 2},      {"R2", 56, 64, 64, 1, 1},      {"R3", 56, 64, 64, 3, 1},
    {"R4", 56, 64, 256, 1, 1},     {"R5", 56, 256, 64, 1, 1},     {"R6", 56, 256, 128, 1, 1},
    {"R7", 56, 128, 128, 3, 2},    {"R8", 28, 128, 512, 1, 1},    {"R9", 56, 256, 512, 1, 2},
    {"R10", 28, 512, 128, 1, 1},   {"R11", 28, 128, 128, 3, 1},   {"R12", 28, 512, 256, 1, 1},
    {"R13", 28, 256, 256, 3, 2},   {"R14", 14, 256, 1024, 1, 1},  {"R15", 28, 512, 1024, 1, 2},
    {"R16", 14, 1024, 256, 1, 1},  {"R17", 14, 256, 256, 3, 1},   {"R18", 14, 1024, 512, 1, 1},
    {"R19", 14, 512, 512, 3, 2},   {"R20", 7, 512, 2048, 1, 1},   {"R21", 14, 1024, 2048, 1, 2},
    {"R22", 7, 2048, 512, 1, 1},   {"R23", 7, 512, 512, 3, 1},
};
constexpr int kResnet50Repeats[] = {1, 1, 3, 4, 2, 1, 1, 4, 1, 3, 3, 1,
                                    1, 6, 1, 5, 5, 1, 1, 3, 1, 2, 2};
static_assert(std::size(kResnet50Repeats) == std::size(kResnet50));

// One depthwise layer: input size, channels, stride, repeats; 3×3, pad 1.
struct DepthwiseRow {
  const char* name;
  int64_t size, c, stride;
  int repeat;
};

constexpr DepthwiseRow kMobilenet[] = {
    {"D1", 112, 32, 1, 1}, {"D2", 112, 64, 2, 1}, {"D3", 56, 128, 1, 1},
    {"D4", 56, 128, 2, 1}, {"D5", 28, 256, 1, 1}, {"D6", 28, 256, 2, 1},
    {"D7", 14, 512, 1, 5}, {"D8", 14, 512, 2, 1}, {"D9", 7, 1024, 1, 1},
};

// MobileNet v2 (Sandler et al., 2018, Table 2) on 224x224 inputs: its 20 distinct dense
// convolutions (the stem and the 1x1 expansions and projections; P0-P19) and 10 distinct
// depthwise ones (W1-W10), with how often each runs (52 layers in all).
struct PointwiseRow {
  const char* name;
  int64_t size, c, k;
  int repeat;
};
constexpr PointwiseRow kMobilenetV2Pointwise[] = {
    {"P1", 112, 32, 16, 1},   {"P2", 112, 16, 96, 1},   {"P3", 56, 96, 24, 1},
    {"P4", 56, 24, 144, 2},   {"P5", 56, 144, 24, 1},   {"P6", 28, 144, 32, 1},
    {"P7", 28, 32, 192, 3},   {"P8", 28, 192, 32, 2},   {"P9", 14, 192, 64, 1},
    {"P10", 14, 64, 384, 4},  {"P11", 14, 384, 64, 3},  {"P12", 14, 384, 96, 1},
    {"P13", 14, 96, 576, 3},  {"P14", 14, 576, 96, 2},  {"P15", 7, 576, 160, 1},
    {"P16", 7, 160, 960, 3},  {"P17", 7, 960, 160, 2},  {"P18", 7, 960, 320, 1},
    {"P19", 7, 320, 1280, 1},
};
constexpr DepthwiseRow kMobilenetV2Depthwise[] = {
    {"W1", 112, 32, 1, 1},  {"W2", 112, 96, 2, 1}, {"W3", 56, 144, 1, 1}, {"W4", 56, 144, 2, 1},
    {"W5", 28, 192, 1, 2},  {"W6", 28, 192, 2, 1}, {"W7", 14, 384, 1, 4}, {"W8", 14, 576, 1, 2},
    {"W9", 14, 576, 2, 1},  {"W10", 7, 960, 1, 3},
};

SuiteLayer conv_layer(const ConvRow& l, int64_t batch, int repeat) {
  SuiteLayer layer;
  layer.name = l.name;
  layer.op = "conv2d";
  layer.shape = {batch, l.c, l.size, l.size, l.k, l.r, l.r, l.stride, l.r / 2, 1};
  layer.repeat = repeat;
  layer.description =
      fmt::format("{}x{}, {}->{}, {}x{}, stride {}", l.size, l.size, l.c, l.k, l.r, l.r, l.stride);
  return layer;
}

SuiteLayer depthwise_layer(const DepthwiseRow& l, int64_t batch) {
  SuiteLayer layer;
  layer.name = l.name;
  layer.op = "depthwise_conv2d";
  layer.shape = {batch, l.c, l.size, l.size, 3, 3, l.stride, 1, 1};
  layer.repeat = l.repeat;
  layer.description =
      fmt::format("{}x{}, {} channels, 3x3, stride {}", l.size, l.size, l.c, l.stride);
  return layer;
}

}  // namespace

std::vector<SuiteInfo> list_suites() {
  return {{"resnet18", "the 12 distinct conv2d layers of ResNet-18 (C1-C12), 224x224 input"},
          {"mobilenet", "the 9 distinct depthwise layers of MobileNet v1 (D1-D9), 224x224 input"},
          {"resnet50", "the 23 distinct conv2d layers of ResNet-50 v1.5 (R1-R23, 53 in the "
                       "network), 224x224 input"},
          {"mobilenet_v2", "the 20 distinct dense (P0-P19) and 10 depthwise (W1-W10) layers of "
                           "MobileNet v2 (52 in the network), 224x224 input"},
          {"llama3-8b", "the 4 GEMMs of a Llama 3 8B decoder layer (qkv, o, gate_up, down) at "
                        "each token count of --tokens"}};
}

std::vector<SuiteLayer> suite_layers(const std::string& suite, int64_t batch) {
  if (batch < 1) throw TaskError(fmt::format("batch size must be >= 1, got {}", batch));
  std::vector<SuiteLayer> out;
  if (suite == "resnet18") {
    for (const ConvRow& l : kResnet18) out.push_back(conv_layer(l, batch, 1));
    return out;
  }
  if (suite == "resnet50") {
    for (size_t i = 0; i < std::size(kResnet50); ++i)
      out.push_back(conv_layer(kResnet50[i], batch, kResnet50Repeats[i]));
    return out;
  }
  if (suite == "mobilenet") {
    for (const DepthwiseRow& l : kMobilenet) out.push_back(depthwise_layer(l, batch));
    return out;
  }
  if (suite == "mobilenet_v2") {
    out.push_back(conv_layer({"P0", 224, 3, 32, 3, 2}, batch, 1));
    for (const PointwiseRow& l : kMobilenetV2Pointwise)
      out.push_back(conv_layer({l.name, l.size, l.c, l.k, 1, 1}, batch, l.repeat));
    for (const DepthwiseRow& l : kMobilenetV2Depthwise) out.push_back(depthwise_layer(l, batch));
    return out;
  }
  if (suite == "llama3-8b")
    throw TaskError(fmt::format("{} is a transformer model: its layers are GEMMs at token "
                                "counts (kernels/gemm_suites.h)", suite));
  std::string known;
  for (const SuiteInfo& s : list_suites()) known += (known.empty() ? "" : ", ") + s.name;
  throw TaskError(fmt::format("unknown suite '{}' (known: {})", suite, known));
}

std::string suite_layer_op(const SuiteLayer& layer, const std::string& suite_dtype) {
  const std::string& dtype = layer.dtype.empty() ? suite_dtype : layer.dtype;
  if (dtype == "fp32") return layer.op;
  if (dtype == "fp8" || dtype == "e4m3" || dtype == "e5m2") {
    throw TaskError(fmt::format("layer {}: cutune has no fp8 templates yet (fp16, bf16, fp32)",
                                layer.name));
  }
  if (dtype != "fp16" && dtype != "bf16") {
    throw TaskError(fmt::format("unknown dtype '{}' (known: fp32, fp16, bf16)", dtype));
  }
  if (layer.op != "conv2d" && layer.op != "gemm") {
    throw TaskError(fmt::format("layer {} ({}) has no {} template: conv2d and gemm layers do",
                                layer.name, layer.op, dtype));
  }
  return layer.op + "_" + dtype;
}

}  // namespace cutune
