#pragma once
// The shape of one 2-D convolution task, shared by the conv2d and depthwise templates: how a
// user's size list reads, what makes it impossible, and the CPU references.
//
// conv2d:           N,C,H,W,K,R,S[,stride[,pad[,dilation]]]   (K output channels)
// depthwise_conv2d: N,C,H,W,R,S[,stride[,pad[,dilation]]]     (channel multiplier 1: K = C)
// Omitted trailing parameters default to stride 1, pad 0, dilation 1. Padding is symmetric
// (pad rows above and below, pad columns left and right, all zeros). Output extents are
//   P = (H + 2·pad - dilation·(R-1) - 1) / stride + 1,   Q likewise from W and S,
// and must be >= 1. Every tensor must have fewer than 2^31 elements so that all generated
// indices fit Int32.

#include <cstdint>
#include <string>
#include <vector>

namespace cutune {

struct ConvShape {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input batch, channels, rows, columns
  int64_t k = 1;                       // output channels (== c for depthwise)
  int64_t r = 1, s = 1;                // filter rows, columns
  int64_t stride = 1, pad = 0, dilation = 1;
  int64_t p = 1, q = 1;  // output rows, columns (derived)
  bool depthwise = false;

  int64_t input_elements() const { return n * c * h * w; }
  int64_t filter_elements() const { return depthwise ? c * r * s : k * c * r * s; }
  int64_t output_elements() const { return n * k * p * q; }
  // Multiply-adds per output element.
  int64_t reduction_length() const { return depthwise ? r * s : c * r * s; }
  double flops() const { return 2.0 * double(output_elements()) * double(reduction_length()); }
  // The full size list, in the order the user writes it (all optional parameters included).
  std::vector<int64_t> to_vector() const;
  // "N=1 C=64 H=56 W=56 K=64 R=3 S=3 stride=1 pad=1 dilation=1 -> P=56 Q=56"
  std::string to_string() const;
};

// The size lists as a user writes them (conv2d, depthwise_conv2d).
inline constexpr const char* kConv2dShapeHelp = "N,C,H,W,K,R,S[,stride[,pad[,dilation]]]";
inline constexpr const char* kDepthwiseShapeHelp = "N,C,H,W,R,S[,stride[,pad[,dilation]]]";

// Parse and validate; throw TaskError with a one-line message on a wrong count of sizes, a
// size < 1 (pad < 0), an empty output, or a tensor too large for Int32 indices.
ConvShape conv2d_shape(const std::vector<int64_t>& sizes, const std::string& op = "conv2d");
ConvShape depthwise_shape(const std::vector<int64_t>& sizes);

// Output extent of one spatial axis (may be <= 0 for an impossible shape).
int64_t conv_output_extent(int64_t in, int64_t filter, int64_t stride, int64_t pad,
                           int64_t dilation);

// Data layouts the references (and templates) use.
enum class ConvLayout {
  nchw,  // input [N,C,H,W], filter [K,C,R,S], output [N,K,P,Q]; depthwise filter [C,1,R,S]
  nhwc   // input [N,H,W,C], filter [R,S,C,K] (HWIO), output [N,P,Q,K]
};

// Computes the output from input and filter on the CPU with double accumulation.
void conv_reference(const ConvShape& shape, ConvLayout layout, const std::vector<float>& input,
                    const std::vector<float>& filter, std::vector<float>& output);

}  // namespace cutune
