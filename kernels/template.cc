#include "kernels/template.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/conv2d_nchw.h"
#include "kernels/conv2d_nhwc.h"
#include "kernels/conv2d_tc.h"
#include "kernels/conv_shape.h"
#include "kernels/depthwise_conv2d.h"
#include "kernels/gemm.h"
#include "kernels/gemm_tc.h"

namespace cutune {

std::vector<OpInfo> list_ops() {
  return {
      {"gemm", {"gemm_nn", "gemm_nt"}, "M,N,K",
       "fp32 C[M,N] = A[M,K]·B[K,N] (gemm_nn) or A·Bᵀ with B stored [N,K] (gemm_nt)"},
      {"gemm_fp16", GemmTcTemplate::template_names("gemm_fp16"), "M,N,K",
       "tensor-core C[M,N] = A[M,K]·B with fp16 inputs and fp32 accumulation; B [K,N] (_nn) or "
       "[N,K] (_nt); C fp32, or fp16 for the _out16 templates"},
      {"gemm_bf16", GemmTcTemplate::template_names("gemm_bf16"), "M,N,K",
       "tensor-core C[M,N] = A[M,K]·B with bf16 inputs and fp32 accumulation; B [K,N] (_nn) or "
       "[N,K] (_nt); C fp32, or bf16 for the _out16 templates"},
      {"conv2d", {"conv2d_nchw", "conv2d_nhwc"}, "N,C,H,W,K,R,S[,stride[,pad[,dilation]]]",
       "fp32 2-D convolution: direct in NCHW with a KCRS filter (conv2d_nchw), or implicit GEMM "
       "in NHWC with an RSCK filter (conv2d_nhwc)"},
      {"conv2d_fp16", Conv2dTcTemplate::template_names("conv2d_fp16"),
       "N,C,H,W,K,R,S[,stride[,pad[,dilation]]]",
       "tensor-core 2-D convolution as an implicit GEMM with fp16 inputs and fp32 accumulation: "
       "input NHWC, filter RSCK; output NPQK in fp32, or fp16 for conv2d_fp16_nhwc_out16"},
      {"conv2d_bf16", Conv2dTcTemplate::template_names("conv2d_bf16"),
       "N,C,H,W,K,R,S[,stride[,pad[,dilation]]]",
       "tensor-core 2-D convolution as an implicit GEMM with bf16 inputs and fp32 accumulation: "
       "input NHWC, filter RSCK; output NPQK in fp32, or bf16 for conv2d_bf16_nhwc_out16"},
      {"depthwise_conv2d", {"depthwise_conv2d_nchw"}, "N,C,H,W,R,S[,stride[,pad[,dilation]]]",
       "fp32 depthwise 2-D convolution in NCHW, filter [C,1,R,S] (channel multiplier 1)"},
  };
}

std::unique_ptr<Template> make_template(const std::string& op, const std::vector<int64_t>& shape,
                                        const std::string& template_name) {
  if (op == "gemm") {
    if (shape.size() != 3) {
      throw TaskError(fmt::format("gemm takes a shape M,N,K (3 sizes), got {} sizes", shape.size()));
    }
    GemmLayout layout;
    if (template_name.empty() || template_name == "gemm_nn") {
      layout = GemmLayout::nn;
    } else if (template_name == "gemm_nt") {
      layout = GemmLayout::nt;
    } else {
      throw TaskError(fmt::format("unknown template '{}' for gemm (known: gemm_nn, gemm_nt)",
                                  template_name));
    }
    return std::make_unique<GemmTemplate>(shape[0], shape[1], shape[2], layout);
  }
  if (op == "gemm_fp16" || op == "gemm_bf16") {
    if (shape.size() != 3) {
      throw TaskError(fmt::format("{} takes a shape M,N,K (3 sizes), got {} sizes", op,
                                  shape.size()));
    }
    std::string name = template_name.empty() ? op + "_nn" : template_name;
    std::vector<std::string> known = GemmTcTemplate::template_names(op);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw TaskError(fmt::format("unknown template '{}' for {} (known: {})", template_name, op,
                                  fmt::join(known, ", ")));
    }
    TcLayout layout = name.find("_nt") != std::string::npos ? TcLayout::nt : TcLayout::nn;
    bool out16 = name.ends_with("_out16");
    ir::DType input = op == "gemm_fp16" ? ir::DType::Float16 : ir::DType::BFloat16;
    return std::make_unique<GemmTcTemplate>(shape[0], shape[1], shape[2], layout, input, out16);
  }
  if (op == "conv2d") {
    ConvShape conv = conv2d_shape(shape);
    if (template_name.empty() || template_name == "conv2d_nchw") {
      return std::make_unique<Conv2dNchwTemplate>(conv);
    }
    if (template_name == "conv2d_nhwc") return std::make_unique<Conv2dNhwcTemplate>(conv);
    throw TaskError(fmt::format(
        "unknown template '{}' for conv2d (known: conv2d_nchw, conv2d_nhwc)", template_name));
  }
  if (op == "conv2d_fp16" || op == "conv2d_bf16") {
    if (shape.size() < 7 || shape.size() > 10) {
      throw TaskError(fmt::format("{} takes a shape N,C,H,W,K,R,S[,stride[,pad[,dilation]]] "
                                  "(7 to 10 sizes), got {} sizes",
                                  op, shape.size()));
    }
    std::string name = template_name.empty() ? op + "_nhwc" : template_name;
    std::vector<std::string> known = Conv2dTcTemplate::template_names(op);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw TaskError(fmt::format("unknown template '{}' for {} (known: {})", template_name, op,
                                  fmt::join(known, ", ")));
    }
    ir::DType input = op == "conv2d_fp16" ? ir::DType::Float16 : ir::DType::BFloat16;
    return std::make_unique<Conv2dTcTemplate>(conv2d_shape(shape), input,
                                              name.ends_with("_out16"));
  }
  if (op == "depthwise_conv2d") {
    ConvShape conv = depthwise_shape(shape);
    if (template_name.empty() || template_name == "depthwise_conv2d_nchw") {
      return std::make_unique<DepthwiseConv2dTemplate>(conv);
    }
    throw TaskError(fmt::format(
        "unknown template '{}' for depthwise_conv2d (known: depthwise_conv2d_nchw)",
        template_name));
  }
  std::string known;
  for (const OpInfo& o : list_ops()) known += (known.empty() ? "" : ", ") + o.op;
  throw TaskError(fmt::format("unknown operator '{}' (known: {})", op, known));
}

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find_first_of(",x", pos);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(pos, end - pos);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size()) {
      throw TaskError(fmt::format("bad shape '{}': expected positive integers separated by commas",
                                  text));
    }
    if (v < 0) throw TaskError(fmt::format("bad shape '{}': sizes must not be negative", text));
    out.push_back(v);
    pos = end + 1;
  }
  return out;
}

}  // namespace cutune
