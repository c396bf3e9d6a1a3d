#include "kernels/schedule_helpers.h"
#include "kernels/conv2d_tc.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/tc_blocks.h"
#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

Conv16Template::Conv16Template(const ConvShape& shape, DType input, bool out16, const char* kind)
    : shape_(shape), input_(input), out16_(out16) {
  if (input != DType::Float16 && input != DType::BFloat16) {
    throw TaskError(fmt::format("{} takes fp16 or bf16 inputs", kind));
  }
  if (shape_.depthwise) throw TaskError(op() + " needs a conv2d shape, not a depthwise one");
}

std::string Conv16Template::op() const {
  return input_ == DType::Float16 ? "conv2d_fp16" : "conv2d_bf16";
}

std::vector<TensorSpec> Conv16Template::tensors() const {
  Type in{input_, 1};
  TensorSpec out{"Output", out16_ ? in : Type::f32(), shape_.output_elements(), true};
  out.zero_init = !out16_;  // split-K configurations add into it
  return {out,
          {"Input", in, shape_.input_elements(), false},
          {"Filter", in, shape_.filter_elements(), false}};
}

void Conv16Template::reference(std::vector<std::vector<float>>& t) const {
  conv_reference(shape_, ConvLayout::nhwc, t[1], t[2], t[0]);
}

int conv_widest_copy(int64_t len) {
  int e = 8;
  while (len % e != 0) e /= 2;
  return e;
}

tc::SourceFn conv_gather_source(const ConvShape& s, bool m_tail, bool k_tail, int tap_slice) {
  const int64_t m = s.n * s.p * s.q, k = s.r * s.s * s.c;
  const bool by_tap = tap_slice > 0 && s.c % tap_slice == 0;
  // im2col on the fly: tile row = output pixel, tile column = (r, s, c) with c fastest. A copy
  // of up to conv_widest_copy(C) channels stays within one pixel, so it is in range as a whole.
  return [=](const Expr& row0, const Expr& col0, const Expr& row, const Expr& col) {
    Expr gm = row0 + row, kk = col0 + col;
    Expr img = gm / (s.p * s.q), oy = gm / s.q % s.p, ox = gm % s.q;
    // A slice inside one filter tap takes the tap from its start, the same for the whole block
    // (uniform registers, no per-copy division); otherwise every copy decomposes its column.
    Expr c, fx, fy;
    if (by_tap) {
      Expr tap = col0 / s.c;
      c = col0 % s.c + col, fx = tap % s.s, fy = tap / s.s;
    } else {
      c = kk % s.c, fx = kk / s.c % s.s, fy = kk / (s.c * s.s);
    }
    Expr iy = oy * s.stride - s.pad + fy * s.dilation;
    Expr ix = ox * s.stride - s.pad + fx * s.dilation;
    tc::CopySource src;
    if (m_tail) src.in_range.push_back(gm < m);
    if (k_tail) src.in_range.push_back(kk < k);
    // Without padding every (m, kk) in range reads inside the image: P and Q are defined so.
    if (s.pad > 0) src.in_range.push_back(iy >= 0 && iy < s.h && ix >= 0 && ix < s.w);
    src.index = ((img * s.h + iy) * s.w + ix) * s.c + c;
    return src;
  };
}

Conv2dTcTemplate::Conv2dTcTemplate(const ConvShape& shape, DType input, bool out16)
    : Conv16Template(shape, input, out16, "a tensor-core convolution") {
  define_space();
}

std::string Conv2dTcTemplate::name() const { return op() + "_nhwc" + (out16_ ? "_out16" : ""); }

void Conv2dTcTemplate::define_space() {
  tc::define_tc_knobs(space_);
  const int64_t m = gemm_m(), n = shape_.k, k = gemm_k();
  const int widest = std::max(conv_widest_copy(shape_.c), conv_widest_copy(shape_.k));
  space_.add_constraint("copies no wider than the channels C or K allow",
                        [widest](const Config& c) { return c.get("copy_bytes") / 2 <= widest; });
  space_.add_constraint(
      "block tile less than twice the extent, or the smallest", [m, n, k](const Config& c) {
        int64_t bm = c.get("block_m"), bn = c.get("block_n"), bk = c.get("block_k");
        return (bm == 32 || bm < 2 * m) && (bn == 32 || bn < 2 * n) && (bk == 16 || bk < 2 * k);
      });
  tc::add_tc_shape_constraints(space_, true, n, k, out16_);
}

std::vector<Config> Conv2dTcTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) { add_if_valid(space_, std::move(knobs), out); };
  // The GEMM's Ampere-style kernel: 128x128x32 blocks of 4 warps of 64x64, a 4-stage ring of
  // swizzled 16-byte chunks, ldmatrix fragments, grouped blocks.
  add(tc::ring_knobs(128, 128, 64, 64, 4, 8));
  // Layers with few output channels (K = 64) or few pixels.
  add(tc::ring_knobs(128, 64, 64, 32, 4, 8));
  add(tc::ring_knobs(64, 128, 32, 64, 4, 4));
  add(tc::ring_knobs(64, 64, 32, 32, 3, 4));
  return out;
}

std::vector<std::string> Conv2dTcTemplate::loop_names() const { return tc::tc_loop_names(); }

std::vector<std::string> Conv2dTcTemplate::buffer_names() const {
  std::vector<std::string> names = {"Output", "Input", "Filter"};
  for (std::string& b : tc::tc_local_buffer_names()) names.push_back(std::move(b));
  return names;
}

Kernel Conv2dTcTemplate::build(const Config& config) const {
  const tc::TcParams p = tc::tc_params(config);
  const ConvShape s = shape_;
  const int64_t m = gemm_m(), k = gemm_k();
  const int max_elems = p.copy_bytes / 2;
  const Type in{input_, 1};
  const bool m_tail = m % p.bm != 0, k_tail = k % p.bk != 0;

  tc::SourceFn gather = conv_gather_source(s, m_tail, k_tail);

  tc::TcGemmSpec spec;
  spec.name = name();
  spec.m = m, spec.n = s.k, spec.k = k;
  spec.input = input_;
  spec.out16 = out16_;
  spec.b_k_major = true;
  spec.a = {Buffer::make("Input", in, MemoryScope::global, s.input_elements(), true),
            std::min(max_elems, conv_widest_copy(s.c)), gather};
  spec.b = {Buffer::make("Filter", in, MemoryScope::global, s.filter_elements(), true),
            std::min(max_elems, conv_widest_copy(s.k)),
            tc::matrix_source(s.k, k, s.k, k_tail, s.k % p.bn != 0)};
  spec.c =
      Buffer::make("Output", out16_ ? in : Type::f32(), MemoryScope::global, s.output_elements());
  spec.parameters = {spec.c, spec.a.global, spec.b.global};
  return tc::build_tc_gemm(spec, p);
}

namespace {

const FamilyRegistrar kConv2dMma{
    {.computation = "conv2d",
     .family = "mma",
     .shape_help = kConv2dShapeHelp,
     .description = "implicit GEMM on mma.sync tensor cores with fp32 accumulation: 16-bit "
                    "inputs, input NHWC, filter RSCK; output NPQK in fp32 or like the inputs",
     .native_arch = kAnyArch,
     .supported = combinations("conv2d", "mma", {"fp16", "bf16"}, {"nhwc"}, true),
     .make = [](const TaskParams& p,
                const std::vector<int64_t>& shape) -> std::unique_ptr<Template> {
       return std::make_unique<Conv2dTcTemplate>(conv2d_shape(shape, operator_name(p)),
                                                 element_type(p.dtype), p.out_dtype != "fp32");
     }}};

}  // namespace

}  // namespace cutune
