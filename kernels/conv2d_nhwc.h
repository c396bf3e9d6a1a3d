#pragma once
// fp32 2-D convolution in NHWC as an implicit GEMM. Input [N,H,W,C], filter [R,S,C,K] (HWIO:
// the filter is then exactly a row-major [R·S·C, K] matrix), output [N,P,Q,K]; any shape,
// stride, padding and dilation (see conv_shape.h), every tail guarded.
//
// The convolution is the GEMM Out[M, K] = A[M, R·S·C] · Filter[R·S·C, K] with M = N·P·Q, where
// row m = (n, p, q) of A is the receptive field of output pixel (n, p, q), column kk = (r, s, c)
// with c fastest, and A[m, kk] = Input[n, p·stride - pad + r·dilation, q·stride - pad +
// s·dilation, c], zero in the padding. A is never built: while a block copies its A tile from
// global memory it decomposes m and kk and reads the input directly (im2col on the fly), the
// padding and the M and K tails guarded. The output rows m are the NPQ pixels, so the GEMM's C
// is the output tensor as it lies.
//
// Knobs as in the GEMM template: block_m × block_n output tile per block, block_k reduction
// step, thread_m × thread_n register tile per thread (rows in chunks of frag_m consecutive
// rows strided by the thread grid, columns likewise), vec_load-wide copies (legal along c for
// A only when C is a multiple of it, along K for the filter only when K is), smem_pad padding
// of the shared rows, double_buffer (registers prefetch the next step during this one's
// compute), and unroll_k.

#include "kernels/conv_template.h"

namespace cutune {

class Conv2dNhwcTemplate final : public ConvTemplate {
 public:
  explicit Conv2dNhwcTemplate(const ConvShape& shape);

  std::string op() const override { return "conv2d"; }
  std::string name() const override { return "conv2d_nhwc"; }
  ir::Kernel build(const Config& config) const override;
  std::vector<Config> reference_configs() const override;
  // Every loop variable and buffer build() can produce (the feature extractor's slots).
  std::vector<std::string> loop_names() const override;
  std::vector<std::string> buffer_names() const override;

  int64_t gemm_m() const { return shape_.n * shape_.p * shape_.q; }
  int64_t gemm_k() const { return shape_.r * shape_.s * shape_.c; }

 private:
  void define_space();
};

}  // namespace cutune
