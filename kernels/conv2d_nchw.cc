#include "kernels/conv2d_nchw.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/conv2d_nhwc.h"
#include "kernels/schedule_helpers.h"
#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

namespace {

const std::vector<int64_t> kVthreads = {1, 2};
const std::vector<int64_t> kThreadsF = {1, 2, 4, 8, 16, 32};
const std::vector<int64_t> kThreadsYX = {1, 2, 4, 7, 8, 14, 16};
const std::vector<int64_t> kInnerF = {1, 2, 4, 8};
const std::vector<int64_t> kInnerYX = {1, 2, 4};
constexpr int64_t kMaxAccumulators = 64;  // beyond, sampled kernels spill at 255 registers
constexpr int64_t kMaxSharedBytes = 48 * 1024;

// One output axis's four-way split: block (derived) · vthread · thread · inner.
struct AxisTile {
  int64_t v, t, i;
  int64_t tile() const { return v * t * i; }
  int64_t per_thread() const { return v * i; }
  // Block-relative position of a thread's j-th element (j in [0, v·i)).
  Expr local(const Expr& thread_index, const Expr& j) const {
    return j / i * (t * i) + thread_index * i + j % i;
  }
};

struct NchwParams {
  AxisTile f, y, x;
  int64_t rc, ry_outer, ry_inner, rx_outer, rx_inner, max_unroll;
  int64_t threads() const { return f.t * y.t * x.t; }
  int64_t accumulators() const { return f.per_thread() * y.per_thread() * x.per_thread(); }
};

NchwParams params_of(const Config& c) {
  NchwParams p{};
  p.f = {c.get("vthread_f"), c.get("thread_f"), c.get("inner_f")};
  p.y = {c.get("vthread_y"), c.get("thread_y"), c.get("inner_y")};
  p.x = {c.get("vthread_x"), c.get("thread_x"), c.get("inner_x")};
  p.rc = c.get("rc_inner");
  p.ry_outer = c.split("tile_ry")[0];
  p.ry_inner = c.split("tile_ry")[1];
  p.rx_outer = c.split("tile_rx")[0];
  p.rx_inner = c.split("tile_rx")[1];
  p.max_unroll = c.get("auto_unroll_max_step");
  return p;
}

}  // namespace

Conv2dNchwTemplate::Conv2dNchwTemplate(const ConvShape& shape)
    : ConvTemplate(shape, ConvLayout::nchw) {
  if (shape_.depthwise) throw TaskError("conv2d_nchw needs a conv2d shape, not a depthwise one");
  define_space();
}

void Conv2dNchwTemplate::define_space() {
  const ConvShape s = shape_;
  space_.define_choice("vthread_f", kVthreads);
  space_.define_choice("thread_f", kThreadsF);
  space_.define_choice("inner_f", kInnerF);
  space_.define_choice("vthread_y", kVthreads);
  space_.define_choice("thread_y", kThreadsYX);
  space_.define_choice("inner_y", kInnerYX);
  space_.define_choice("vthread_x", kVthreads);
  space_.define_choice("thread_x", kThreadsYX);
  space_.define_choice("inner_x", kInnerYX);
  space_.define_choice("rc_inner", {1, 2, 4, 8, 16, 32});
  space_.define_split("tile_ry", s.r, 2);
  space_.define_split("tile_rx", s.s, 2);
  space_.define_choice("auto_unroll_max_step", {0, 16, 64, 512});

  space_.add_constraint("each block tile is less than twice its extent", [s](const Config& c) {
    NchwParams p = params_of(c);
    return p.f.tile() < 2 * s.k && p.y.tile() < 2 * s.p && p.x.tile() < 2 * s.q && p.rc < 2 * s.c;
  });
  const int64_t min_threads =
      std::min<int64_t>(32, max_threads_along(kThreadsF, s.k) * max_threads_along(kThreadsYX, s.p) *
                                max_threads_along(kThreadsYX, s.q));
  space_.add_constraint(fmt::format("{} to 1024 threads per block", min_threads),
                        [min_threads](const Config& c) {
                          int64_t t = params_of(c).threads();
                          return t >= min_threads && t <= 1024;
                        });
  space_.add_constraint(
      fmt::format("at most {} accumulators per thread", kMaxAccumulators),
      [](const Config& c) { return params_of(c).accumulators() <= kMaxAccumulators; });
  space_.add_constraint("input patch and filter tile fit 48 KiB of shared memory",
                        [s](const Config& c) {
                          NchwParams p = params_of(c);
                          int64_t in = p.rc * patch_extent(p.y.tile(), p.ry_inner, s) *
                                       patch_extent(p.x.tile(), p.rx_inner, s);
                          int64_t w = p.rc * p.ry_inner * p.rx_inner * p.f.tile();
                          return (in + w) * 4 <= kMaxSharedBytes;
                        });
}

std::vector<Config> Conv2dNchwTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) {
    knobs["tile_ry"] = {1, shape_.r};
    knobs["tile_rx"] = {1, shape_.s};
    add_if_valid(space_, std::move(knobs), out);
  };
  // 32 channels × 8×8 outputs a block, 128 threads with 4×2×2 outputs each.
  add({{"vthread_f", 1},
       {"thread_f", 8},
       {"inner_f", 4},
       {"vthread_y", 1},
       {"thread_y", 4},
       {"inner_y", 2},
       {"vthread_x", 1},
       {"thread_x", 4},
       {"inner_x", 2},
       {"rc_inner", 8},
       {"auto_unroll_max_step", 512}});
  // For the 7·2^k feature maps of ImageNet networks: 7×7 threads, two channel groups.
  add({{"vthread_f", 2},
       {"thread_f", 4},
       {"inner_f", 2},
       {"vthread_y", 1},
       {"thread_y", 7},
       {"inner_y", 1},
       {"vthread_x", 1},
       {"thread_x", 7},
       {"inner_x", 2},
       {"rc_inner", 4},
       {"auto_unroll_max_step", 512}});
  // Small problems: 8 channels × 4×4 outputs, 128 threads of one output each.
  add({{"vthread_f", 1},
       {"thread_f", 8},
       {"inner_f", 1},
       {"vthread_y", 1},
       {"thread_y", 4},
       {"inner_y", 1},
       {"vthread_x", 1},
       {"thread_x", 4},
       {"inner_x", 1},
       {"rc_inner", 4},
       {"auto_unroll_max_step", 64}});
  return out;
}

Kernel Conv2dNchwTemplate::build(const Config& config) const {
  const NchwParams p = params_of(config);
  const ConvShape& s = shape_;
  const int64_t threads = p.threads();
  const int64_t tile_f = p.f.tile(), tile_y = p.y.tile(), tile_x = p.x.tile();
  const int64_t f_blocks = ceil_div(s.k, tile_f);
  const int64_t patch_h = patch_extent(tile_y, p.ry_inner, s);
  const int64_t patch_w = patch_extent(tile_x, p.rx_inner, s);
  const int64_t taps = p.ry_inner * p.rx_inner;
  const int64_t in_elems = p.rc * patch_h * patch_w;
  const int64_t w_elems = p.rc * taps * tile_f;
  const int64_t nf = p.f.per_thread(), ny = p.y.per_thread(), nx = p.x.per_thread();

  Buffer input = Buffer::make("Input", Type::f32(), MemoryScope::global, s.input_elements(), true);
  Buffer filter =
      Buffer::make("Filter", Type::f32(), MemoryScope::global, s.filter_elements(), true);
  Buffer output = Buffer::make("Output", Type::f32(), MemoryScope::global, s.output_elements());
  Buffer in_shared = Buffer::make("Input_shared", Type::f32(), MemoryScope::shared, in_elems);
  Buffer w_shared = Buffer::make("Filter_shared", Type::f32(), MemoryScope::shared, w_elems);
  Buffer acc = Buffer::make("Output_local", Type::f32(), MemoryScope::local, nf * ny * nx);
  Buffer w_reg = Buffer::make("Filter_reg", Type::f32(), MemoryScope::local, nf);
  Buffer in_reg = Buffer::make("Input_reg", Type::f32(), MemoryScope::local, ny * nx);

  Expr t = int_var("tx"), bx = int_var("bx"), by = int_var("by"), bz = int_var("bz");
  Expr n = int_var("n"), fb = int_var("f_block");
  Expr t_f = int_var("thread_f"), t_y = int_var("thread_y"), t_x = int_var("thread_x");
  Expr rco = int_var("rc_outer"), ryo = int_var("ry_outer"), rxo = int_var("rx_outer");

  // Where this step's patch starts in the (unpadded) input; it may start in the padding.
  Expr c0 = rco * p.rc;
  Expr iy0 = by * (tile_y * s.stride) + ryo * (p.ry_inner * s.dilation) - s.pad;
  Expr ix0 = bx * (tile_x * s.stride) + rxo * (p.rx_inner * s.dilation) - s.pad;
  Expr f0 = fb * tile_f;

  Stmt load_input = cooperative("in_ld", in_elems, threads, t, [&](Expr v) {
    Expr cc = v / (patch_h * patch_w), yy = v / patch_w % patch_h, xx = v % patch_w;
    Expr ic = c0 + cc, iy = iy0 + yy, ix = ix0 + xx;
    Stmt copy =
        Store::make(in_shared, v, Load::make(input, ((n * s.c + ic) * s.h + iy) * s.w + ix));
    Stmt zero = Store::make(in_shared, v, f32(0.0));
    return IfThenElse::make(ic < s.c && iy >= 0 && iy < s.h && ix >= 0 && ix < s.w, copy, zero);
  });
  // Read in the global order (filter columns fastest) so that neighbouring threads read
  // neighbouring words, and store as [c][ry][rx][f] so that the compute loop's reads are.
  Stmt load_filter = cooperative("w_ld", w_elems, threads, t, [&](Expr v) {
    Expr rx = v % p.rx_inner, ry = v / p.rx_inner % p.ry_inner;
    Expr cc = v / taps % p.rc, ff = v / (taps * p.rc);
    Expr kf = f0 + ff, ic = c0 + cc;
    Expr gry = ryo * p.ry_inner + ry, grx = rxo * p.rx_inner + rx;
    Expr slot = ((cc * p.ry_inner + ry) * p.rx_inner + rx) * tile_f + ff;
    Stmt copy =
        Store::make(w_shared, slot, Load::make(filter, ((kf * s.c + ic) * s.r + gry) * s.s + grx));
    Stmt zero = Store::make(w_shared, slot, f32(0.0));
    return IfThenElse::make(kf < s.k && ic < s.c, copy, zero);
  });

  Expr rci = int_var("rc_inner"), ryi = int_var("ry_inner"), rxi = int_var("rx_inner");
  Expr jf = int_var("jf"), jy = int_var("jy"), jx = int_var("jx");
  Stmt fetch_w = For::make(
      "jf", 0, nf, ForKind::unrolled,
      Store::make(w_reg, jf,
                  Load::make(w_shared, ((rci * p.ry_inner + ryi) * p.rx_inner + rxi) * tile_f +
                                           p.f.local(t_f, jf))));
  Expr patch_row = p.y.local(t_y, jy) * s.stride + ryi * s.dilation;
  Expr patch_col = p.x.local(t_x, jx) * s.stride + rxi * s.dilation;
  Stmt fetch_in = For::make(
      "jy", 0, ny, ForKind::unrolled,
      For::make(
          "jx", 0, nx, ForKind::unrolled,
          Store::make(in_reg, jy * nx + jx,
                      Load::make(in_shared, (rci * patch_h + patch_row) * patch_w + patch_col))));
  Expr slot = (jf * ny + jy) * nx + jx;
  Expr product = Load::make(w_reg, jf) * Load::make(in_reg, jy * nx + jx);
  Stmt fma =
      For::make("jf", 0, nf, ForKind::unrolled,
                For::make("jy", 0, ny, ForKind::unrolled,
                          For::make("jx", 0, nx, ForKind::unrolled,
                                    Store::make(acc, slot, Load::make(acc, slot) + product))));

  // auto_unroll_max_step: unroll from the innermost reduction loop outwards while the product
  // of the unrolled trip counts stays within the knob.
  ForKind kinds[3];
  int64_t unrolled = 1;
  bool still = true;
  const int64_t extents[3] = {p.rx_inner, p.ry_inner, p.rc};
  for (int i = 0; i < 3; ++i) {
    still = still && unrolled * extents[i] <= p.max_unroll;
    kinds[i] = still ? ForKind::unrolled : ForKind::serial;
    if (still) unrolled *= extents[i];
  }
  Stmt compute = For::make("rc_inner", 0, p.rc, kinds[2],
                           For::make("ry_inner", 0, p.ry_inner, kinds[1],
                                     For::make("rx_inner", 0, p.rx_inner, kinds[0],
                                               Block::make({fetch_w, fetch_in, fma}))));

  Stmt step = Block::make({load_input, load_filter, Sync::make(), compute, Sync::make()});
  Stmt reduction =
      For::make("rc_outer", 0, ceil_div(s.c, p.rc), ForKind::serial,
                For::make("ry_outer", 0, p.ry_outer, ForKind::serial,
                          For::make("rx_outer", 0, p.rx_outer, ForKind::serial, step)));

  Expr z = int_var("i");
  Stmt init = For::make("i", 0, nf * ny * nx, ForKind::unrolled, Store::make(acc, z, f32(0.0)));

  Expr of = f0 + p.f.local(t_f, jf);
  Expr oy = by * tile_y + p.y.local(t_y, jy);
  Expr ox = bx * tile_x + p.x.local(t_x, jx);
  Stmt write = IfThenElse::make(
      of < s.k && oy < s.p && ox < s.q,
      Store::make(output, ((n * s.k + of) * s.p + oy) * s.q + ox, Load::make(acc, slot)));
  Stmt epilogue = For::make(
      "jf", 0, nf, ForKind::unrolled,
      For::make("jy", 0, ny, ForKind::unrolled, For::make("jx", 0, nx, ForKind::unrolled, write)));

  Stmt body = Block::make({init, reduction, epilogue});
  body = Allocate::make(in_reg, body);
  body = Allocate::make(w_reg, body);
  body = Allocate::make(acc, body);
  body = Allocate::make(w_shared, body);
  body = Allocate::make(in_shared, body);
  body = LetStmt::make("thread_x", t % p.x.t, body);
  body = LetStmt::make("thread_y", t / p.x.t % p.y.t, body);
  body = LetStmt::make("thread_f", t / (p.x.t * p.y.t), body);
  body = LetStmt::make("f_block", bz % f_blocks, body);
  body = LetStmt::make("n", bz / f_blocks, body);
  body = For::make("tx", 0, threads, ForKind::thread_x, body);
  body = For::make("bx", 0, ceil_div(s.q, tile_x), ForKind::block_x, body);
  body = For::make("by", 0, ceil_div(s.p, tile_y), ForKind::block_y, body);
  body = For::make("bz", 0, s.n * f_blocks, ForKind::block_z, body);

  Kernel kernel;
  kernel.name = name();
  kernel.buffers = {output, input, filter};
  kernel.body = body;
  return kernel;
}

std::vector<std::string> Conv2dNchwTemplate::loop_names() const {
  return {"bz",   "by",       "bx",       "tx",       "rc_outer", "ry_outer", "rx_outer", "in_ld",
          "w_ld", "rc_inner", "ry_inner", "rx_inner", "jf",       "jy",       "jx",       "i"};
}

std::vector<std::string> Conv2dNchwTemplate::buffer_names() const {
  return {"Output",        "Input",        "Filter",    "Input_shared",
          "Filter_shared", "Output_local", "Input_reg", "Filter_reg"};
}

namespace {

// Both fp32 schedules: direct in NCHW, and as an implicit GEMM in NHWC (conv2d_nhwc.h).
const FamilyRegistrar kConv2dSimt{
    {.computation = "conv2d",
     .family = "simt",
     .shape_help = kConv2dShapeHelp,
     .description = "on FMA units: direct in NCHW with a KCRS filter (nchw), or implicit GEMM "
                    "in NHWC with an RSCK filter (nhwc)",
     .native_arch = kAnyArch,
     .supported = combinations("conv2d", "simt", {"fp32"}, {"nchw", "nhwc"}, false),
     .make = [](const TaskParams& p,
                const std::vector<int64_t>& shape) -> std::unique_ptr<Template> {
       if (p.layout == "nhwc") return std::make_unique<Conv2dNhwcTemplate>(conv2d_shape(shape));
       return std::make_unique<Conv2dNchwTemplate>(conv2d_shape(shape));
     }}};

}  // namespace

}  // namespace cutune
