#pragma once
// fp32 direct 2-D convolution in NCHW, in the manner of AutoTVM's conv2d_direct for CUDA.
// Input [N,C,H,W], filter [K,C,R,S], output [N,K,P,Q]; any shape, stride, padding and
// dilation (see conv_shape.h); every tail is guarded.
//
// Each of the three output axes — channels f (K), rows y (P), columns x (Q) — is split four
// ways: block · virtual thread · thread · inner. The thread, inner and virtual-thread sizes
// are choice knobs (vthread_*, thread_*, inner_*) and the block count is the ceiling of the
// extent over their product, so that prime and odd extents (7, 55, 3) get any tiling and the
// overhang is guarded. (Split knobs, as AutoTVM uses, would only allow exact factorisations:
// a 7×7 or 3-channel axis would get no tiling at all.) The product is kept below twice the
// extent so that no configuration is mostly overhang. A thread's outputs along one axis are
// (v, i) -> v·(thread·inner) + thread_index·inner + i: virtual threads are strided by the whole
// thread tile, inner elements are consecutive.
//
// The grid is (x blocks, y blocks, N · f blocks); the block's threads are one flat thread_x
// dimension of thread_f·thread_y·thread_x threads. The reduction over input channels is split
// by rc_inner (a choice knob; the last chunk is guarded), the filter rows and columns by the
// split knobs tile_ry and tile_rx (outer · inner, exact). For each (rc, ry, rx) outer step the
// block cooperatively copies the input patch (rc_inner channels, with the halo the inner
// filter rows and columns need, zero where it falls in the padding) and the filter tile
// (stored [c][ry][rx][f]) into shared memory; each thread then accumulates its outputs — the
// product over f, y and x of vthread·inner — in registers. auto_unroll_max_step unrolls the
// inner reduction loops from the innermost outwards while the product of their trip counts
// stays within it (0: only the register-tile loops are unrolled).

#include "kernels/conv_template.h"

namespace cutune {

class Conv2dNchwTemplate final : public ConvTemplate {
 public:
  explicit Conv2dNchwTemplate(const ConvShape& shape);

  std::string op() const override { return "conv2d"; }
  std::string name() const override { return "conv2d_nchw"; }
  ir::Kernel build(const Config& config) const override;
  std::vector<Config> reference_configs() const override;
  // Every loop variable and buffer build() can produce (the feature extractor's slots).
  std::vector<std::string> loop_names() const override;
  std::vector<std::string> buffer_names() const override;

 private:
  void define_space();
};

}  // namespace cutune
