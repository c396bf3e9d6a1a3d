#include "kernels/conv2d_nhwc.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/schedule_helpers.h"
#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

namespace {

struct NhwcParams {
  int64_t bm, bn, bk, tm, tn, fm, fn, vec, pad;
  bool double_buffer, unroll_k;
  int64_t threads_m() const { return bm / tm; }
  int64_t threads_n() const { return bn / tn; }
  int64_t threads() const { return threads_m() * threads_n(); }
};

NhwcParams params_of(const Config& c) {
  NhwcParams p{};
  p.bm = c.get("block_m");
  p.bn = c.get("block_n");
  p.bk = c.get("block_k");
  p.tm = c.get("thread_m");
  p.tn = c.get("thread_n");
  p.fm = c.get("frag_m");
  p.fn = c.get("frag_n");
  p.vec = c.get("vec_load");
  p.pad = c.get("smem_pad");
  p.double_buffer = c.get("double_buffer") != 0;
  p.unroll_k = c.get("unroll_k") != 0;
  return p;
}

}  // namespace

Conv2dNhwcTemplate::Conv2dNhwcTemplate(const ConvShape& shape)
    : ConvTemplate(shape, ConvLayout::nhwc) {
  if (shape_.depthwise) throw TaskError("conv2d_nhwc needs a conv2d shape, not a depthwise one");
  define_space();
}

void Conv2dNhwcTemplate::define_space() {
  space_.define_choice("block_m", {16, 32, 64, 128});
  space_.define_choice("block_n", {16, 32, 64, 128});
  space_.define_choice("block_k", {4, 8, 16, 32});
  space_.define_choice("thread_m", {1, 2, 4, 8});
  space_.define_choice("thread_n", {1, 2, 4, 8});
  space_.define_choice("frag_m", {1, 4});
  space_.define_choice("frag_n", {1, 4});
  space_.define_choice("vec_load", {1, 2, 4});
  space_.define_choice("smem_pad", {0, 4});
  space_.define_bool("double_buffer");
  space_.define_bool("unroll_k");

  const int64_t m = gemm_m(), k = shape_.k, c = shape_.c, kg = gemm_k();
  space_.add_constraint("block tile divisible by the thread tile", [](const Config& cf) {
    NhwcParams p = params_of(cf);
    return p.bm % p.tm == 0 && p.bn % p.tn == 0;
  });
  space_.add_constraint("32 to 1024 threads per block, whole warps", [](const Config& cf) {
    int64_t t = params_of(cf).threads();
    return t >= 32 && t <= 1024 && t % 32 == 0;
  });
  space_.add_constraint("block tile (and K step) less than twice the extent, or the smallest",
                        [m, k, kg](const Config& cf) {
                          NhwcParams p = params_of(cf);
                          return (p.bm == 16 || p.bm < 2 * m) && (p.bn == 16 || p.bn < 2 * k) &&
                                 (p.bk == 4 || p.bk < 2 * kg);
                        });
  space_.add_constraint("fragment chunks divide the thread tile", [](const Config& cf) {
    NhwcParams p = params_of(cf);
    return p.tm % p.fm == 0 && p.tn % p.fn == 0;
  });
  space_.add_constraint("at most 128 accumulators per thread", [](const Config& cf) {
    NhwcParams p = params_of(cf);
    return p.tm * p.tn <= 128;
  });
  space_.add_constraint(
      "load vectors divide the tiles, the input channels and K", [c, k](const Config& cf) {
        NhwcParams p = params_of(cf);
        return p.bk % p.vec == 0 && p.bn % p.vec == 0 && c % p.vec == 0 && k % p.vec == 0;
      });
  space_.add_constraint("padded shared rows keep vector alignment", [](const Config& cf) {
    NhwcParams p = params_of(cf);
    return (p.bm + p.pad) % p.fm == 0 && (p.bn + p.pad) % std::max(p.fn, p.vec) == 0;
  });
  space_.add_constraint("tiles fit 48 KiB of shared memory", [](const Config& cf) {
    NhwcParams p = params_of(cf);
    int64_t stages = p.double_buffer ? 2 : 1;
    return stages * p.bk * (p.bm + p.bn + 2 * p.pad) * 4 <= 48 * 1024;
  });
}

std::vector<Config> Conv2dNhwcTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) { add_if_valid(space_, std::move(knobs), out); };
  for (int vec : {4, 1}) {
    // The SGEMM-like tile: 128×64 per block, 8×4 per thread, double buffered.
    add({{"block_m", 128},
         {"block_n", 64},
         {"block_k", 8},
         {"thread_m", 8},
         {"thread_n", 4},
         {"frag_m", 4},
         {"frag_n", 4},
         {"vec_load", vec},
         {"smem_pad", 4},
         {"double_buffer", 1},
         {"unroll_k", 1}});
    // Smaller tiles for layers with few output pixels.
    add({{"block_m", 32},
         {"block_n", 64},
         {"block_k", 16},
         {"thread_m", 4},
         {"thread_n", 4},
         {"frag_m", 4},
         {"frag_n", 4},
         {"vec_load", vec},
         {"smem_pad", 4},
         {"double_buffer", 1},
         {"unroll_k", 1}});
  }
  return out;
}

Kernel Conv2dNhwcTemplate::build(const Config& config) const {
  const NhwcParams p = params_of(config);
  const ConvShape& s = shape_;
  const int64_t m = gemm_m(), kg = gemm_k();
  const int64_t threads = p.threads();
  const int64_t tm_threads = p.threads_m(), tn_threads = p.threads_n();
  const int64_t stages = p.double_buffer ? 2 : 1;
  const int64_t lda_s = p.bm + p.pad;  // A_shared is [stage][k][m]
  const int64_t ldb_s = p.bn + p.pad;  // B_shared is [stage][k][n]
  const int64_t k_steps = ceil_div(kg, p.bk);
  const bool k_tail = kg % p.bk != 0;

  Buffer input = Buffer::make("Input", Type::f32(), MemoryScope::global, s.input_elements(), true);
  Buffer filter =
      Buffer::make("Filter", Type::f32(), MemoryScope::global, s.filter_elements(), true);
  Buffer output = Buffer::make("Output", Type::f32(), MemoryScope::global, s.output_elements());
  Buffer a_shared =
      Buffer::make("A_shared", Type::f32(), MemoryScope::shared, stages * p.bk * lda_s);
  Buffer b_shared =
      Buffer::make("B_shared", Type::f32(), MemoryScope::shared, stages * p.bk * ldb_s);
  Buffer acc = Buffer::make("Output_local", Type::f32(), MemoryScope::local, p.tm * p.tn);
  Buffer a_frag = Buffer::make("A_frag", Type::f32(), MemoryScope::local, p.tm);
  Buffer b_frag = Buffer::make("B_frag", Type::f32(), MemoryScope::local, p.tn);
  VectorTile a_tile{"a", p.bm, p.bk, p.vec, threads, Buffer(), a_shared, true, lda_s};
  VectorTile b_tile{"b", p.bk, p.bn, p.vec, threads, Buffer(), b_shared, false, ldb_s};
  a_tile.regs = Buffer::make("A_ld", Type::f32(), MemoryScope::local, a_tile.per_thread() * p.vec);
  b_tile.regs = Buffer::make("B_ld", Type::f32(), MemoryScope::local, b_tile.per_thread() * p.vec);

  Expr t = int_var("tx"), bx = int_var("bx"), by = int_var("by");
  Expr thread_row = int_var("thread_row"), thread_col = int_var("thread_col");

  // Global -> registers for the K step starting at k0. The A copy is the im2col.
  auto load_tiles = [&](const Expr& k0) {
    Stmt la = a_tile.for_each_vector(t, [&](Expr r, Expr row, Expr col) {
      Expr gm = bx * p.bm + row, kk = k0 + col;
      Expr img = gm / (s.p * s.q), oy = gm / s.q % s.p, ox = gm % s.q;
      Expr c = kk % s.c, fx = kk / s.c % s.s, fy = kk / (s.c * s.s);
      Expr iy = oy * s.stride - s.pad + fy * s.dilation;
      Expr ix = ox * s.stride - s.pad + fx * s.dilation;
      std::vector<Expr> in_bounds = {gm < m};
      if (k_tail) in_bounds.push_back(kk < kg);
      // Without padding every valid (m, kk) reads inside the input: P and Q are defined so.
      if (s.pad > 0) in_bounds.push_back(iy >= 0 && iy < s.h && ix >= 0 && ix < s.w);
      Stmt copy = Store::make(a_tile.regs, r * p.vec,
                              Load::make(input, ((img * s.h + iy) * s.w + ix) * s.c + c, p.vec));
      return IfThenElse::make(all_of(in_bounds), copy, a_tile.zero(r));
    });
    Stmt lb = b_tile.for_each_vector(t, [&](Expr r, Expr row, Expr col) {
      Expr kk = k0 + row, gn = by * p.bn + col;
      std::vector<Expr> in_bounds = {gn < s.k};
      if (k_tail) in_bounds.push_back(kk < kg);
      Stmt copy = Store::make(b_tile.regs, r * p.vec, Load::make(filter, kk * s.k + gn, p.vec));
      return IfThenElse::make(all_of(in_bounds), copy, b_tile.zero(r));
    });
    return Block::make({la, lb});
  };
  // Registers -> shared stage; A is transposed to [k][m].
  auto store_tiles = [&](const Expr& stage) {
    return Block::make(
        {a_tile.store(t, stage * (p.bk * lda_s)), b_tile.store(t, stage * (p.bk * ldb_s))});
  };

  const RegisterTile tile{
      p.bm,  p.bn,       p.bk,     p.tm,     p.tn, p.fm,   p.fn,   tm_threads, tn_threads, lda_s,
      ldb_s, p.unroll_k, a_shared, b_shared, acc,  a_frag, b_frag, thread_row, thread_col};
  Stmt main_loop = tile.main_loop(k_steps, p.double_buffer, load_tiles, store_tiles);
  // The output is the GEMM's row-major C.
  Stmt epilogue = tile.epilogue(output, bx * p.bm, by * p.bn, i32(m), s.k);

  Stmt body = Block::make({tile.init(), main_loop, epilogue});
  body = tile.allocate(body, a_tile.regs, b_tile.regs);
  body = LetStmt::make("thread_col", t % tn_threads, body);
  body = LetStmt::make("thread_row", t / tn_threads, body);
  body = For::make("tx", 0, threads, ForKind::thread_x, body);
  // Pixel tiles on grid x (up to 2^31 - 1 blocks), output-channel tiles on grid y.
  body = For::make("by", 0, ceil_div(s.k, p.bn), ForKind::block_y, body);
  body = For::make("bx", 0, ceil_div(m, p.bm), ForKind::block_x, body);

  Kernel kernel;
  kernel.name = name();
  kernel.buffers = {output, input, filter};
  kernel.body = body;
  return kernel;
}

std::vector<std::string> Conv2dNhwcTemplate::loop_names() const {
  return {"by",  "bx",  "tx",   "k_outer", "a",      "a_z",    "a_e", "a_ld", "b",
          "b_z", "b_e", "b_ld", "k",       "i_frag", "j_frag", "i",   "j"};
}

std::vector<std::string> Conv2dNhwcTemplate::buffer_names() const {
  return {"Output",       "Input",  "Filter", "A_shared", "B_shared",
          "Output_local", "A_frag", "B_frag", "A_ld",     "B_ld"};
}

}  // namespace cutune
