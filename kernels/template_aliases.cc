// The template names of before operators were data, as logs hold them (template.h). Frozen:
// a row is never changed or removed, since logs written with it exist; a name that logs never
// held does not belong here (new names are template_name's).

#include "kernels/template.h"

namespace cutune {

const std::vector<TemplateAlias>& template_aliases() {
  // op, name: {computation, dtype, out_dtype, layout, family}.
  static const std::vector<TemplateAlias> kAliases = {
      {"gemm", "gemm_nn", {"gemm", "fp32", "fp32", "nn", "simt"}},
      {"gemm", "gemm_nt", {"gemm", "fp32", "fp32", "nt", "simt"}},
      {"gemm_fp16", "gemm_fp16_nn", {"gemm", "fp16", "fp32", "nn", "mma"}},
      {"gemm_fp16", "gemm_fp16_nt", {"gemm", "fp16", "fp32", "nt", "mma"}},
      {"gemm_fp16", "gemm_fp16_nn_out16", {"gemm", "fp16", "fp16", "nn", "mma"}},
      {"gemm_fp16", "gemm_fp16_nt_out16", {"gemm", "fp16", "fp16", "nt", "mma"}},
      {"gemm_fp16", "gemm_fp16_wgmma_nn", {"gemm", "fp16", "fp32", "nn", "wgmma"}},
      {"gemm_fp16", "gemm_fp16_wgmma_nt", {"gemm", "fp16", "fp32", "nt", "wgmma"}},
      {"gemm_fp16", "gemm_fp16_wgmma_nn_out16", {"gemm", "fp16", "fp16", "nn", "wgmma"}},
      {"gemm_fp16", "gemm_fp16_wgmma_nt_out16", {"gemm", "fp16", "fp16", "nt", "wgmma"}},
      {"gemm_bf16", "gemm_bf16_nn", {"gemm", "bf16", "fp32", "nn", "mma"}},
      {"gemm_bf16", "gemm_bf16_nt", {"gemm", "bf16", "fp32", "nt", "mma"}},
      {"gemm_bf16", "gemm_bf16_nn_out16", {"gemm", "bf16", "bf16", "nn", "mma"}},
      {"gemm_bf16", "gemm_bf16_nt_out16", {"gemm", "bf16", "bf16", "nt", "mma"}},
      {"gemm_bf16", "gemm_bf16_wgmma_nn", {"gemm", "bf16", "fp32", "nn", "wgmma"}},
      {"gemm_bf16", "gemm_bf16_wgmma_nt", {"gemm", "bf16", "fp32", "nt", "wgmma"}},
      {"gemm_bf16", "gemm_bf16_wgmma_nn_out16", {"gemm", "bf16", "bf16", "nn", "wgmma"}},
      {"gemm_bf16", "gemm_bf16_wgmma_nt_out16", {"gemm", "bf16", "bf16", "nt", "wgmma"}},
      {"conv2d", "conv2d_nchw", {"conv2d", "fp32", "fp32", "nchw", "simt"}},
      {"conv2d", "conv2d_nhwc", {"conv2d", "fp32", "fp32", "nhwc", "simt"}},
      {"conv2d_fp16", "conv2d_fp16_nhwc", {"conv2d", "fp16", "fp32", "nhwc", "mma"}},
      {"conv2d_fp16", "conv2d_fp16_nhwc_out16", {"conv2d", "fp16", "fp16", "nhwc", "mma"}},
      {"conv2d_fp16", "conv2d_fp16_wgmma_nhwc", {"conv2d", "fp16", "fp32", "nhwc", "wgmma"}},
      {"conv2d_fp16", "conv2d_fp16_wgmma_nhwc_out16", {"conv2d", "fp16", "fp16", "nhwc", "wgmma"}},
      {"conv2d_bf16", "conv2d_bf16_nhwc", {"conv2d", "bf16", "fp32", "nhwc", "mma"}},
      {"conv2d_bf16", "conv2d_bf16_nhwc_out16", {"conv2d", "bf16", "bf16", "nhwc", "mma"}},
      {"conv2d_bf16", "conv2d_bf16_wgmma_nhwc", {"conv2d", "bf16", "fp32", "nhwc", "wgmma"}},
      {"conv2d_bf16", "conv2d_bf16_wgmma_nhwc_out16", {"conv2d", "bf16", "bf16", "nhwc", "wgmma"}},
      {"depthwise_conv2d",
       "depthwise_conv2d_nchw",
       {"depthwise_conv2d", "fp32", "fp32", "nchw", "simt"}},
  };
  return kAliases;
}

}  // namespace cutune
