#include "kernels/depthwise_conv2d.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/schedule_helpers.h"
#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

namespace {

const std::vector<int64_t> kThreadsY = {1, 2, 4, 7, 8, 16};
const std::vector<int64_t> kThreadsX = {1, 2, 4, 7, 8, 14, 16, 32};
constexpr int64_t kMaxAccumulators = 64;

struct DepthwiseParams {
  int64_t cb, ty, tx, iy, ix;
  bool interleave, unroll;
  int64_t threads() const { return ty * tx; }
  int64_t tile_y() const { return ty * iy; }
  int64_t tile_x() const { return tx * ix; }
};

DepthwiseParams params_of(const Config& c) {
  DepthwiseParams p{};
  p.cb = c.get("channel_block");
  p.ty = c.get("thread_y");
  p.tx = c.get("thread_x");
  p.iy = c.get("inner_y");
  p.ix = c.get("inner_x");
  p.interleave = c.get("interleave") != 0;
  p.unroll = c.get("unroll_filter") != 0;
  return p;
}

}  // namespace

DepthwiseConv2dTemplate::DepthwiseConv2dTemplate(const ConvShape& shape)
    : ConvTemplate(shape, ConvLayout::nchw) {
  if (!shape_.depthwise) throw TaskError("depthwise_conv2d_nchw needs a depthwise shape");
  define_space();
}

void DepthwiseConv2dTemplate::define_space() {
  const ConvShape s = shape_;
  space_.define_choice("channel_block", {1, 2, 4});
  space_.define_choice("thread_y", kThreadsY);
  space_.define_choice("thread_x", kThreadsX);
  space_.define_choice("inner_y", {1, 2, 4});
  space_.define_choice("inner_x", {1, 2, 4});
  space_.define_bool("interleave");
  space_.define_bool("unroll_filter");

  space_.add_constraint("each block tile is less than twice its extent", [s](const Config& c) {
    DepthwiseParams p = params_of(c);
    return p.cb < 2 * s.c && p.tile_y() < 2 * s.p && p.tile_x() < 2 * s.q;
  });
  const int64_t min_threads =
      std::min<int64_t>(32, max_threads_along(kThreadsY, s.p) * max_threads_along(kThreadsX, s.q));
  space_.add_constraint(fmt::format("{} to 1024 threads per block", min_threads),
                        [min_threads](const Config& c) {
                          int64_t t = params_of(c).threads();
                          return t >= min_threads && t <= 1024;
                        });
  space_.add_constraint(fmt::format("at most {} accumulators per thread", kMaxAccumulators),
                        [](const Config& c) {
                          DepthwiseParams p = params_of(c);
                          return p.cb * p.iy * p.ix <= kMaxAccumulators;
                        });
  space_.add_constraint(
      "input patches and filters fit 48 KiB of shared memory", [s](const Config& c) {
        DepthwiseParams p = params_of(c);
        int64_t patch = patch_extent(p.tile_y(), s.r, s) * patch_extent(p.tile_x(), s.s, s);
        return p.cb * (patch + s.r * s.s) * 4 <= 48 * 1024;
      });
}

std::vector<Config> DepthwiseConv2dTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) { add_if_valid(space_, std::move(knobs), out); };
  // 16×32 outputs of one channel per block, two per thread, interleaved.
  add({{"channel_block", 1},
       {"thread_y", 8},
       {"thread_x", 32},
       {"inner_y", 2},
       {"inner_x", 1},
       {"interleave", 1},
       {"unroll_filter", 1}});
  // The 7·2^k feature maps: 7 or 14 columns of threads.
  add({{"channel_block", 2},
       {"thread_y", 8},
       {"thread_x", 14},
       {"inner_y", 1},
       {"inner_x", 1},
       {"interleave", 1},
       {"unroll_filter", 1}});
  add({{"channel_block", 2},
       {"thread_y", 7},
       {"thread_x", 7},
       {"inner_y", 1},
       {"inner_x", 1},
       {"interleave", 1},
       {"unroll_filter", 1}});
  return out;
}

Kernel DepthwiseConv2dTemplate::build(const Config& config) const {
  const DepthwiseParams p = params_of(config);
  const ConvShape& s = shape_;
  const int64_t threads = p.threads();
  const int64_t tile_y = p.tile_y(), tile_x = p.tile_x();
  const int64_t c_blocks = ceil_div(s.c, p.cb);
  const int64_t patch_h = patch_extent(tile_y, s.r, s), patch_w = patch_extent(tile_x, s.s, s);
  const int64_t patch = patch_h * patch_w;
  const int64_t taps = s.r * s.s;

  Buffer input = Buffer::make("Input", Type::f32(), MemoryScope::global, s.input_elements(), true);
  Buffer filter =
      Buffer::make("Filter", Type::f32(), MemoryScope::global, s.filter_elements(), true);
  Buffer output = Buffer::make("Output", Type::f32(), MemoryScope::global, s.output_elements());
  Buffer in_shared = Buffer::make("Input_shared", Type::f32(), MemoryScope::shared, p.cb * patch);
  Buffer w_shared = Buffer::make("Filter_shared", Type::f32(), MemoryScope::shared, p.cb * taps);
  Buffer acc = Buffer::make("Output_local", Type::f32(), MemoryScope::local, p.cb * p.iy * p.ix);

  Expr t = int_var("tx"), bx = int_var("bx"), by = int_var("by"), bz = int_var("bz");
  Expr n = int_var("n"), cblk = int_var("c_block");
  Expr t_y = int_var("thread_y"), t_x = int_var("thread_x");
  Expr c0 = cblk * p.cb;
  Expr iy0 = by * (tile_y * s.stride) - s.pad, ix0 = bz * (tile_x * s.stride) - s.pad;

  Stmt load_input = cooperative("in_ld", p.cb * patch, threads, t, [&](Expr v) {
    Expr cc = v / patch, yy = v / patch_w % patch_h, xx = v % patch_w;
    Expr ic = c0 + cc, iy = iy0 + yy, ix = ix0 + xx;
    Stmt copy =
        Store::make(in_shared, v, Load::make(input, ((n * s.c + ic) * s.h + iy) * s.w + ix));
    return IfThenElse::make(ic < s.c && iy >= 0 && iy < s.h && ix >= 0 && ix < s.w, copy,
                            Store::make(in_shared, v, f32(0.0)));
  });
  // The block's filters are contiguous in global memory: [c0, c0 + cb) × R × S.
  Stmt load_filter = cooperative("w_ld", p.cb * taps, threads, t, [&](Expr v) {
    Stmt copy = Store::make(w_shared, v, Load::make(filter, c0 * taps + v));
    return IfThenElse::make(c0 * taps + v < s.c * taps, copy, Store::make(w_shared, v, f32(0.0)));
  });

  auto local = [&](const Expr& thread_index, int64_t threads_along, int64_t inner, const Expr& j) {
    return p.interleave ? j * threads_along + thread_index : thread_index * inner + j;
  };
  Expr cc = int_var("cc"), ry = int_var("ry"), rx = int_var("rx");
  Expr i = int_var("i"), j = int_var("j");
  Expr slot = (cc * p.iy + i) * p.ix + j;
  Expr row = local(t_y, p.ty, p.iy, i) * s.stride + ry * s.dilation;
  Expr col = local(t_x, p.tx, p.ix, j) * s.stride + rx * s.dilation;
  Stmt fma = Store::make(
      acc, slot,
      Load::make(acc, slot) + Load::make(w_shared, (cc * s.r + ry) * s.s + rx) *
                                  Load::make(in_shared, cc * patch + row * patch_w + col));
  ForKind filter_kind = p.unroll ? ForKind::unrolled : ForKind::serial;
  Stmt compute =
      For::make("cc", 0, p.cb, ForKind::unrolled,
                For::make("ry", 0, s.r, filter_kind,
                          For::make("rx", 0, s.s, filter_kind,
                                    For::make("i", 0, p.iy, ForKind::unrolled,
                                              For::make("j", 0, p.ix, ForKind::unrolled, fma)))));

  Expr z = int_var("i");
  Stmt init =
      For::make("i", 0, p.cb * p.iy * p.ix, ForKind::unrolled, Store::make(acc, z, f32(0.0)));
  Expr oc = c0 + cc;
  Expr oy = by * tile_y + local(t_y, p.ty, p.iy, i);
  Expr ox = bz * tile_x + local(t_x, p.tx, p.ix, j);
  Stmt write = IfThenElse::make(
      oc < s.c && oy < s.p && ox < s.q,
      Store::make(output, ((n * s.c + oc) * s.p + oy) * s.q + ox, Load::make(acc, slot)));
  Stmt epilogue = For::make("cc", 0, p.cb, ForKind::unrolled,
                            For::make("i", 0, p.iy, ForKind::unrolled,
                                      For::make("j", 0, p.ix, ForKind::unrolled, write)));

  Stmt body = Block::make({init, load_input, load_filter, Sync::make(), compute, epilogue});
  body = Allocate::make(acc, body);
  body = Allocate::make(w_shared, body);
  body = Allocate::make(in_shared, body);
  body = LetStmt::make("thread_x", t % p.tx, body);
  body = LetStmt::make("thread_y", t / p.tx, body);
  body = LetStmt::make("c_block", bx % c_blocks, body);
  body = LetStmt::make("n", bx / c_blocks, body);
  body = For::make("tx", 0, threads, ForKind::thread_x, body);
  body = For::make("bz", 0, ceil_div(s.q, tile_x), ForKind::block_z, body);
  body = For::make("by", 0, ceil_div(s.p, tile_y), ForKind::block_y, body);
  body = For::make("bx", 0, s.n * c_blocks, ForKind::block_x, body);

  Kernel kernel;
  kernel.name = name();
  kernel.buffers = {output, input, filter};
  kernel.body = body;
  return kernel;
}

std::vector<std::string> DepthwiseConv2dTemplate::loop_names() const {
  return {"bz", "by", "bx", "tx", "in_ld", "w_ld", "cc", "ry", "rx", "i", "j"};
}

std::vector<std::string> DepthwiseConv2dTemplate::buffer_names() const {
  return {"Output", "Input", "Filter", "Input_shared", "Filter_shared", "Output_local"};
}

namespace {

const FamilyRegistrar kDepthwiseSimt{
    {.computation = "depthwise_conv2d",
     .family = "simt",
     .shape_help = kDepthwiseShapeHelp,
     .description = "direct on FMA units in NCHW, filter [C,1,R,S] (channel multiplier 1)",
     .native_arch = kAnyArch,
     .supported = combinations("depthwise_conv2d", "simt", {"fp32"}, {"nchw"}, false),
     .make = [](const TaskParams&, const std::vector<int64_t>& shape) -> std::unique_ptr<Template> {
       return std::make_unique<DepthwiseConv2dTemplate>(depthwise_shape(shape));
     }}};

}  // namespace

}  // namespace cutune
