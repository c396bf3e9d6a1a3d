#pragma once
// Hopper warpgroup-MMA 2-D convolution in NHWC as an implicit GEMM, fp16 or bf16 inputs with
// fp32 accumulation on wgmma.mma_async m64nNk16, for sm_90a. Input [N,H,W,C], filter
// [R,S,C,K] (HWIO), output [N,P,Q,K] in fp32, or in the input type (rounded to nearest even)
// for the `_out16` templates. Any shape, stride, padding and dilation that conv_shape.h
// accepts.
//
// Registered as the family conv2d/wgmma, the default on sm_90 (conv2d/mma elsewhere): dtype
// fp16 or bf16, out-dtype fp32 or the input type, layout nhwc (template names such as
// `conv2d_fp16_wgmma_nhwc`: template.h).
//
// The GEMM is conv2d_tc.h's: Out[M = N·P·Q, K] = A[M, R·S·C] · Filter[R·S·C, K], the filter a
// row-major [R·S·C][K] matrix (MN-major in shared memory: the wgmma GEMM's layout nn) and the
// output the GEMM's row-major C. The kernel is the wgmma GEMM's (kernels/wgmma_blocks.h, knobs
// and shared layouts in gemm_wgmma.h) with A read by conv2d_tc's gather source: A is never
// built, each copy into the A tile reads the input pixel's channels directly, and copies that
// fall into the padding or past the M or K tails fill zeros.
//
// Copy width: the wgmma kernel has one width for both operands, so copy_bytes / 2 must keep an
// A copy within one pixel's channels and a filter copy within one row: it divides both C and K
// (copy_bytes 2, synchronous element copies, is always allowed; ResNet-18's C1 with C = 3 has
// only that). Block tiles are kept below twice the GEMM's extent (or at the smallest choice).

#include "kernels/conv_shape.h"
#include "kernels/conv_template.h"

namespace cutune {

class Conv2dWgmmaTemplate final : public Conv16Template {
 public:
  // input: Float16 or BFloat16; out16: output in the input type instead of fp32.
  Conv2dWgmmaTemplate(const ConvShape& shape, ir::DType input, bool out16);

  std::string name() const override;
  ir::Kernel build(const Config& config) const override;
  // A hand-tuned Hopper configuration (128x128x64, two consumer warpgroups, four stages of
  // 128-byte-swizzled tiles, staged epilogue), its 128x64 form for K = 64 layers, and a small
  // one-warpgroup configuration; each with the widest copy the channels allow.
  std::vector<Config> reference_configs() const override;
  std::vector<std::string> loop_names() const override;
  std::vector<std::string> buffer_names() const override;

 private:
  void define_space();
};

}  // namespace cutune
