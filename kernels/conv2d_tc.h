#pragma once
// Tensor-core 2-D convolution in NHWC as an implicit GEMM, fp16 or bf16 inputs with fp32
// accumulation on mma.sync.m16n8k16. Input [N,H,W,C], filter [R,S,C,K] (HWIO), output
// [N,P,Q,K] in fp32, or in the input type (rounded to nearest even) for the `_out16`
// templates. Any shape, stride, padding and dilation that conv_shape.h accepts.
//
// Registered as the family conv2d/mma: dtype fp16 or bf16, out-dtype fp32 or the input type,
// layout nhwc (template names such as `conv2d_fp16_nhwc_out16`: template.h).
//
// The convolution is the GEMM Out[M, K] = A[M, R·S·C] · Filter[R·S·C, K] with M = N·P·Q (row
// m = output pixel (n, p, q); column kk = (r, s, c), c fastest), the filter a row-major
// [R·S·C, K] matrix and the output the GEMM's row-major C as it lies. It is the tensor-core
// GEMM kernel of gemm_tc.h with B row-major (layout nn) and the same knobs, built from the same
// blocks (tc_blocks.h); only the A loader differs: A is never built, each copy into the A tile
// decomposes its m and kk and reads Input[n, p·stride - pad + r·dilation, q·stride - pad +
// s·dilation, c..] directly, and copies that fall into the padding or past the M or K tails
// fill zeros (cp.async with src_bytes 0, or a stored zero).
//
// copy_bytes is the widest copy: the A copies narrow to the widest of 2, 4, 8, 16 bytes that
// keeps a copy within one pixel's channels (C a multiple of it), the filter copies to the widest
// that K allows; copy_bytes wider than both allow is not in the space. Block tiles are kept
// below twice the GEMM's extent (or at the smallest choice), split-K only with fp32 output.

#include "kernels/conv_shape.h"
#include "kernels/tc_blocks.h"
#include "kernels/conv_template.h"

namespace cutune {

// What the implicit-GEMM convolutions share (this one and the warpgroup-MMA one,
// conv2d_wgmma.h): the widest copy, in elements (1, 2, 4 or 8), that keeps a row of `len`
// 16-bit elements aligned (copies never straddle a row, or a pixel's channels), and the
// gather source of A[M, R·S·C]: row m = output pixel, column (r, s, c) with c fastest, read
// from the NHWC input, guarded against the M tail, the K tail and the padding where asked.
// tap_slice > 0 says the K slices are tap_slice wide and start at multiples of it; where C is
// a multiple of it, a slice lies within one filter tap (r, s), found from the slice's start.
int conv_widest_copy(int64_t len);
tc::SourceFn conv_gather_source(const ConvShape& shape, bool m_tail, bool k_tail,
                                int tap_slice = 0);

class Conv2dTcTemplate final : public Conv16Template {
 public:
  // input: Float16 or BFloat16; out16: output in the input type instead of fp32.
  Conv2dTcTemplate(const ConvShape& shape, ir::DType input, bool out16);

  std::string name() const override;
  ir::Kernel build(const Config& config) const override;
  std::vector<Config> reference_configs() const override;
  std::vector<std::string> loop_names() const override;
  std::vector<std::string> buffer_names() const override;

 private:
  void define_space();
};

}  // namespace cutune
