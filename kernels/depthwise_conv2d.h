#pragma once
// fp32 depthwise 2-D convolution in NCHW with channel multiplier 1: input [N,C,H,W], filter
// [C,1,R,S], output [N,C,P,Q]; Out[n,c,p,q] = Σ_{r,s} In[n, c, p·stride - pad + r·dilation,
// q·stride - pad + s·dilation] · Filter[c, 0, r, s]. Any shape (see conv_shape.h), tails
// guarded.
//
// A block computes a tile of channel_block channels × (thread_y·inner_y) output rows ×
// (thread_x·inner_x) output columns of one image; the grid is (N · channel blocks, row tiles,
// column tiles). Its thread_y·thread_x threads (one flat thread_x dimension) first copy, for
// each of its channels, the input patch the tile reads — the tile's rows and columns times
// the stride plus the filter's halo, zero in the padding — and the channel's R×S filter into
// shared memory, then each thread accumulates channel_block·inner_y·inner_x outputs in
// registers. With `interleave` a thread's inner outputs are strided by the thread grid
// (neighbouring threads read neighbouring shared words); without it they are consecutive.
// `unroll_filter` unrolls the R×S loops. Tile sizes are choice knobs with ceiling-divided
// block counts (odd extents such as 7, 14 or 55 are tiled with guards), each kept below twice
// its extent.

#include "kernels/conv_template.h"

namespace cutune {

class DepthwiseConv2dTemplate final : public ConvTemplate {
 public:
  explicit DepthwiseConv2dTemplate(const ConvShape& shape);

  std::string op() const override { return "depthwise_conv2d"; }
  std::string name() const override { return "depthwise_conv2d_nchw"; }
  ir::Kernel build(const Config& config) const override;
  std::vector<Config> reference_configs() const override;
  // Every loop variable and buffer build() can produce (the feature extractor's slots).
  std::vector<std::string> loop_names() const override;
  std::vector<std::string> buffer_names() const override;

 private:
  void define_space();
};

}  // namespace cutune
