#include "kernels/conv2d_wgmma.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/conv2d_tc.h"
#include "kernels/schedule_helpers.h"
#include "kernels/tc_blocks.h"
#include "kernels/wgmma_blocks.h"

namespace cutune {

using namespace ir;

Conv2dWgmmaTemplate::Conv2dWgmmaTemplate(const ConvShape& shape, DType input, bool out16)
    : Conv16Template(shape, input, out16, "a warpgroup-MMA convolution") {
  define_space();
}

std::string Conv2dWgmmaTemplate::name() const {
  return op() + "_wgmma_nhwc" + (out16_ ? "_out16" : "");
}

void Conv2dWgmmaTemplate::define_space() {
  wg::define_wgmma_knobs(space_, /*b_mn_major=*/true);
  const int64_t m = gemm_m(), n = shape_.k, k = gemm_k();
  // One copy width serves both operands (wgmma_blocks.h), so it must suit the narrower.
  const int widest = std::min(conv_widest_copy(shape_.c), conv_widest_copy(shape_.k));
  space_.add_constraint("copies within one pixel's channels C and one filter row K",
                        [widest](const Config& c) { return c.get("copy_bytes") / 2 <= widest; });
  // Larger tiles than that only multiply zero-filled work (and the space).
  space_.add_constraint(
      "block tile less than twice the extent, or the smallest", [m, n, k](const Config& c) {
        const int64_t bm = c.get("block_m"), bn = c.get("block_n"), bk = c.get("block_k");
        return (bm == 64 || bm < 2 * m) && (bn == 64 || bn < 2 * n) && (bk == 32 || bk < 2 * k);
      });
  wg::add_wgmma_shape_constraints(space_, n, k, out16_);
  // After the others, so that configurations written before keep their indices: TMA loads of
  // the filter (a plain [R·S·C][K] matrix; the input is gathered, so by cp.async, and there is
  // no producer, which needs both), wgmmas in flight across slices (mma_pipe), and 8 or 16
  // splits (split_k_wide) for the late layers, whose few output tiles (7x7x512: 4 of 128x128)
  // leave most SMs idle.
  wg::define_wgmma_load_knobs(space_, /*a_tma=*/false, /*b_tma=*/true);
  // cuTensorMapEncodeTiled takes row strides in multiples of 16 bytes: K 16-bit channels.
  space_.add_constraint("TMA needs 16-byte global row strides",
                        [n](const Config& c) { return c.get("loads") == 0 || n % 8 == 0; });
}

std::vector<Config> Conv2dWgmmaTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) { add_if_valid(space_, std::move(knobs), out); };
  // The widest copy the channels allow (16 bytes for every ResNet-18 layer but C1's C = 3).
  const int copy_bytes = 2 * std::min({8, conv_widest_copy(shape_.c), conv_widest_copy(shape_.k)});
  // The wgmma GEMM's Hopper shape: 128x128x64 tiles of two consumer warpgroups (64x128 each),
  // a 4-stage ring of 128-byte-swizzled tiles, grouped blocks, a staged epilogue.
  add(wg::ring_knobs(128, 128, 64, 4, 2, 128, copy_bytes, 8, 2));
  // The same for layers of K = 64 output channels (C1-C3), which a 128-wide tile half wastes.
  add(wg::ring_knobs(128, 64, 64, 4, 2, 128, copy_bytes, 8, 2));
  // A small one for layers with few pixels or channels.
  add(wg::ring_knobs(64, 64, 64, 3, 1, 128, copy_bytes, 4, 1));
  // The smallest K tile, for reductions shorter than 64 (R·S·C < 64).
  add(wg::ring_knobs(64, 64, 32, 3, 1, 64, copy_bytes, 4, 0));
  // The first's ring with tiles the layer fills (64 rows or columns where the pixels or the
  // channels are 64 or fewer), the filter by TMA (where K·2 bytes make 16-byte filter rows)
  // and wgmmas in flight across slices.
  const int bm = gemm_m() > 64 ? 128 : 64, bn = shape_.k > 64 ? 128 : 64;
  const nlohmann::json fitted = wg::ring_knobs(bm, bn, 64, 4, bm / 64, 128, copy_bytes, 8, 2);
  nlohmann::json tma = fitted;
  tma["loads"] = 1;
  tma["mma_pipe"] = 1;
  add(tma);
  // Split-K for the late layers, whose output tiles leave most SMs idle, adding fp32 into
  // the output with atomics (7x7x512 at batch 1: 4 tiles of 64x128, 16 splits of its 72
  // slices of 64).
  const int64_t tiles = ceil_div(gemm_m(), bm) * ceil_div(shape_.k, bn);
  if (const int64_t split = wg::reference_split_k(tiles, ceil_div(gemm_k(), int64_t{64}));
      !out16_ && split > 1) {
    nlohmann::json splits = fitted;
    splits["epilogue"] = 0;
    wg::set_split_k(splits, split);
    add(splits);
  }
  return out;
}

std::vector<std::string> Conv2dWgmmaTemplate::loop_names() const { return wg::wgmma_loop_names(); }

std::vector<std::string> Conv2dWgmmaTemplate::buffer_names() const {
  std::vector<std::string> names = {"Output", "Input", "Filter"};
  for (std::string& b : wg::wgmma_local_buffer_names()) names.push_back(std::move(b));
  return names;
}

Kernel Conv2dWgmmaTemplate::build(const Config& config) const {
  const wg::WgmmaParams p = wg::wgmma_params(config);
  const ConvShape& s = shape_;
  const int64_t m = gemm_m(), n = s.k, k = gemm_k();
  const Type in{input_, 1};
  const bool k_tail = k % p.bk != 0;

  wg::WgmmaGemmSpec spec;
  spec.name = name();
  spec.m = m;
  spec.n = n;
  spec.k = k;
  spec.input = input_;
  spec.out16 = out16_;
  spec.b_mn_major = true;
  spec.a = Buffer::make("Input", in, MemoryScope::global, s.input_elements(), true);
  spec.b = Buffer::make("Filter", in, MemoryScope::global, s.filter_elements(), true);
  spec.c =
      Buffer::make("Output", out16_ ? in : Type::f32(), MemoryScope::global, s.output_elements());
  spec.a_source = conv_gather_source(s, m % p.bm != 0, k_tail, p.bk);
  spec.b_source = tc::matrix_source(n, k, n, k_tail, n % p.bn != 0);
  spec.parameters = {spec.c, spec.a, spec.b};
  spec.b_tma = wg::WgmmaGemmSpec::TmaView{n, k, 2 * n};  // used with loads 1
  return wg::build_wgmma_gemm(spec, p);
}

namespace {

const FamilyRegistrar kConv2dWgmma{
    {.computation = "conv2d",
     .family = "wgmma",
     .shape_help = kConv2dShapeHelp,
     .description = "implicit GEMM on Hopper's warpgroup MMA (sm_90a) with fp32 accumulation: "
                    "16-bit inputs, input NHWC, filter RSCK; output NPQK in fp32 or like the "
                    "inputs",
     .native_arch = "sm_90",
     .supported = combinations("conv2d", "wgmma", {"fp16", "bf16"}, {"nhwc"}, true),
     .make = [](const TaskParams& p,
                const std::vector<int64_t>& shape) -> std::unique_ptr<Template> {
       return std::make_unique<Conv2dWgmmaTemplate>(conv2d_shape(shape, operator_name(p)),
                                                    element_type(p.dtype), p.out_dtype != "fp32");
     }}};

}  // namespace

}  // namespace cutune
