#include "kernels/layer_suites.h"

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

}  // namespace

std::vector<SuiteInfo> list_suites() {
  return {{"resnet18", "the 12 distinct conv2d layers of ResNet-18 (C1-C12), 224x224 input"},
          {"mobilenet", "the 9 distinct depthwise layers of MobileNet v1 (D1-D9), 224x224 input"},
          {"llama3-8b", "the 4 GEMMs of a Llama 3 8B decoder layer (qkv, o, gate_up, down) at "
                        "each token count of --tokens"}};
}

std::vector<SuiteLayer> suite_layers(const std::string& suite, int64_t batch) {
  if (batch < 1) throw TaskError(fmt::format("batch size must be >= 1, got {}", batch));
  std::vector<SuiteLayer> out;
  if (suite == "resnet18") {
    for (const ConvRow& l : kResnet18) {
      SuiteLayer layer;
      layer.name = l.name;
      layer.op = "conv2d";
      layer.shape = {batch, l.c, l.size, l.size, l.k, l.r, l.r, l.stride, l.r / 2, 1};
      layer.description = fmt::format("{}x{}, {}->{}, {}x{}, stride {}", l.size, l.size, l.c,
                                      l.k, l.r, l.r, l.stride);
      out.push_back(std::move(layer));
    }
    return out;
  }
  if (suite == "mobilenet") {
    for (const DepthwiseRow& l : kMobilenet) {
      SuiteLayer layer;
      layer.name = l.name;
      layer.op = "depthwise_conv2d";
      layer.shape = {batch, l.c, l.size, l.size, 3, 3, l.stride, 1, 1};
      layer.repeat = l.repeat;
      layer.description =
          fmt::format("{}x{}, {} channels, 3x3, stride {}", l.size, l.size, l.c, l.stride);
      out.push_back(std::move(layer));
    }
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
