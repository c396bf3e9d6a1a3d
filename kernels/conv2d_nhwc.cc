#include "kernels/conv2d_nhwc.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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

// A rows × cols tile read in vectors of `vec` along its columns, shared out over the
// threads: vector v = r·threads + t. `f` gets the register slot's vector index r and the
// tile-relative row and column of the vector.
Stmt for_each_vector(const std::string& prefix, int64_t rows, int64_t cols, int64_t vec,
                     int64_t threads, const Expr& t,
                     const std::function<Stmt(Expr r, Expr row, Expr col)>& f) {
  const int64_t vectors = rows * cols / vec;
  Expr r = int_var(prefix + "_ld");
  Expr v = r * threads + t;
  Stmt body = f(r, v / (cols / vec), v % (cols / vec) * vec);
  if (vectors % threads != 0) body = IfThenElse::make(v < vectors, body);
  return For::make(prefix + "_ld", 0, ceil_div(vectors, threads), ForKind::unrolled, body);
}

int64_t per_thread_vectors(int64_t rows, int64_t cols, int64_t vec, int64_t threads) {
  return ceil_div(rows * cols / vec, threads);
}

}  // namespace

Conv2dNhwcTemplate::Conv2dNhwcTemplate(const ConvShape& shape) : shape_(shape) {
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
  space_.add_constraint("load vectors divide the tiles, the input channels and K",
                        [c, k](const Config& cf) {
                          NhwcParams p = params_of(cf);
                          return p.bk % p.vec == 0 && p.bn % p.vec == 0 && c % p.vec == 0 &&
                                 k % p.vec == 0;
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
  auto add = [&](nlohmann::json knobs) {
    nlohmann::json j;
    j["knobs"] = std::move(knobs);
    Config c = space_.from_json(j);
    if (space_.is_valid(c)) out.push_back(c);
  };
  for (int vec : {4, 1}) {
    // The SGEMM-like tile: 128×64 per block, 8×4 per thread, double buffered.
    add({{"block_m", 128}, {"block_n", 64}, {"block_k", 8}, {"thread_m", 8}, {"thread_n", 4},
         {"frag_m", 4}, {"frag_n", 4}, {"vec_load", vec}, {"smem_pad", 4},
         {"double_buffer", 1}, {"unroll_k", 1}});
    // Smaller tiles for layers with few output pixels.
    add({{"block_m", 32}, {"block_n", 64}, {"block_k", 16}, {"thread_m", 4}, {"thread_n", 4},
         {"frag_m", 4}, {"frag_n", 4}, {"vec_load", vec}, {"smem_pad", 4},
         {"double_buffer", 1}, {"unroll_k", 1}});
  }
  return out;
}

std::vector<TensorSpec> Conv2dNhwcTemplate::tensors() const {
  return {{"Output", Type::f32(), shape_.output_elements(), true},
          {"Input", Type::f32(), shape_.input_elements(), false},
          {"Filter", Type::f32(), shape_.filter_elements(), false}};
}

void Conv2dNhwcTemplate::reference(std::vector<std::vector<float>>& t) const {
  conv_reference(shape_, ConvLayout::nhwc, t[1], t[2], t[0]);
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
  const int64_t a_vectors = per_thread_vectors(p.bm, p.bk, p.vec, threads);
  const int64_t b_vectors = per_thread_vectors(p.bk, p.bn, p.vec, threads);
  Buffer a_regs = Buffer::make("A_ld", Type::f32(), MemoryScope::local, a_vectors * p.vec);
  Buffer b_regs = Buffer::make("B_ld", Type::f32(), MemoryScope::local, b_vectors * p.vec);

  Expr t = int_var("tx"), bx = int_var("bx"), by = int_var("by");
  Expr thread_row = int_var("thread_row"), thread_col = int_var("thread_col");

  auto zero_vector = [&](const Buffer& regs, const Expr& r, const std::string& var) {
    Expr e = int_var(var);
    return For::make(var, 0, p.vec, ForKind::unrolled, Store::make(regs, r * p.vec + e, f32(0.0)));
  };

  // Global -> registers for the K step starting at k0. The A copy is the im2col.
  auto load_tiles = [&](const Expr& k0) {
    Stmt la = for_each_vector("a", p.bm, p.bk, p.vec, threads, t, [&](Expr r, Expr row, Expr col) {
      Expr gm = bx * p.bm + row, kk = k0 + col;
      Expr img = gm / (s.p * s.q), oy = gm / s.q % s.p, ox = gm % s.q;
      Expr c = kk % s.c, fx = kk / s.c % s.s, fy = kk / (s.c * s.s);
      Expr iy = oy * s.stride - s.pad + fy * s.dilation;
      Expr ix = ox * s.stride - s.pad + fx * s.dilation;
      std::vector<Expr> in_bounds = {gm < m};
      if (k_tail) in_bounds.push_back(kk < kg);
      // Without padding every valid (m, kk) reads inside the input: P and Q are defined so.
      if (s.pad > 0) in_bounds.push_back(iy >= 0 && iy < s.h && ix >= 0 && ix < s.w);
      Stmt copy = Store::make(a_regs, r * p.vec,
                              Load::make(input, ((img * s.h + iy) * s.w + ix) * s.c + c, p.vec));
      return IfThenElse::make(all_of(in_bounds), copy, zero_vector(a_regs, r, "a_z"));
    });
    Stmt lb = for_each_vector("b", p.bk, p.bn, p.vec, threads, t, [&](Expr r, Expr row, Expr col) {
      Expr kk = k0 + row, gn = by * p.bn + col;
      std::vector<Expr> in_bounds = {gn < s.k};
      if (k_tail) in_bounds.push_back(kk < kg);
      Stmt copy = Store::make(b_regs, r * p.vec, Load::make(filter, kk * s.k + gn, p.vec));
      return IfThenElse::make(all_of(in_bounds), copy, zero_vector(b_regs, r, "b_z"));
    });
    return Block::make({la, lb});
  };
  // Registers -> shared stage; A is transposed to [k][m].
  auto store_tiles = [&](const Expr& stage) {
    Stmt sa = for_each_vector("a", p.bm, p.bk, p.vec, threads, t, [&](Expr r, Expr row, Expr col) {
      Expr e = int_var("a_e");
      return For::make("a_e", 0, p.vec, ForKind::unrolled,
                       Store::make(a_shared, stage * (p.bk * lda_s) + (col + e) * lda_s + row,
                                   Load::make(a_regs, r * p.vec + e)));
    });
    Stmt sb = for_each_vector("b", p.bk, p.bn, p.vec, threads, t, [&](Expr r, Expr row, Expr col) {
      return Store::make(b_shared, stage * (p.bk * ldb_s) + row * ldb_s + col,
                         Load::make(b_regs, r * p.vec, p.vec));
    });
    return Block::make({sa, sb});
  };

  auto tile_row = [&](const Expr& i) {
    return i / p.fm * (tm_threads * p.fm) + thread_row * p.fm + i % p.fm;
  };
  auto tile_col = [&](const Expr& j) {
    return j / p.fn * (tn_threads * p.fn) + thread_col * p.fn + j % p.fn;
  };

  auto compute = [&](const Expr& stage) {
    Expr kk = int_var("k"), ii = int_var("i_frag"), jj = int_var("j_frag");
    Stmt load_a = For::make(
        "i_frag", 0, p.tm / p.fm, ForKind::unrolled,
        Store::make(a_frag, ii * p.fm,
                    Load::make(a_shared, stage * (p.bk * lda_s) + kk * lda_s + tile_row(ii * p.fm),
                               int(p.fm))));
    Stmt load_b = For::make(
        "j_frag", 0, p.tn / p.fn, ForKind::unrolled,
        Store::make(b_frag, jj * p.fn,
                    Load::make(b_shared, stage * (p.bk * ldb_s) + kk * ldb_s + tile_col(jj * p.fn),
                               int(p.fn))));
    Expr i = int_var("i"), j = int_var("j");
    Expr slot = i * p.tn + j;
    Stmt fma = Store::make(acc, slot,
                           Load::make(acc, slot) + Load::make(a_frag, i) * Load::make(b_frag, j));
    Stmt outer = For::make("i", 0, p.tm, ForKind::unrolled,
                           For::make("j", 0, p.tn, ForKind::unrolled, fma));
    return For::make("k", 0, p.bk, p.unroll_k ? ForKind::unrolled : ForKind::serial,
                     Block::make({load_a, load_b, outer}));
  };

  Expr ko = int_var("k_outer");
  Stmt main_loop;
  if (!p.double_buffer) {
    main_loop = For::make("k_outer", 0, k_steps, ForKind::serial,
                          Block::make({load_tiles(ko * p.bk), store_tiles(0), Sync::make(),
                                       compute(0), Sync::make()}));
  } else {
    Expr has_next = ko + 1 < k_steps;
    Stmt prologue = Block::make({load_tiles(0), store_tiles(0), Sync::make()});
    Stmt loop = For::make(
        "k_outer", 0, k_steps, ForKind::serial,
        Block::make({IfThenElse::make(has_next, load_tiles((ko + 1) * p.bk)), compute(ko % 2),
                     IfThenElse::make(has_next, store_tiles((ko + 1) % 2)), Sync::make()}));
    main_loop = Block::make({prologue, loop});
  }

  Expr z = int_var("i");
  Stmt init = For::make("i", 0, p.tm * p.tn, ForKind::unrolled, Store::make(acc, z, f32(0.0)));

  // The output is the GEMM's row-major C; vector stores where K keeps them aligned.
  const int64_t store_vec = (s.k % p.fn == 0) ? p.fn : 1;
  Expr i = int_var("i"), jv = int_var("j");
  Expr grow = bx * p.bm + tile_row(i);
  Expr gcol = by * p.bn + tile_col(jv * store_vec);
  Stmt write = IfThenElse::make(
      grow < m && gcol < s.k,
      Store::make(output, grow * s.k + gcol,
                  Load::make(acc, i * p.tn + jv * store_vec, int(store_vec))));
  Stmt epilogue = For::make("i", 0, p.tm, ForKind::unrolled,
                            For::make("j", 0, p.tn / store_vec, ForKind::unrolled, write));

  Stmt body = Block::make({init, main_loop, epilogue});
  body = Allocate::make(b_regs, body);
  body = Allocate::make(a_regs, body);
  body = Allocate::make(b_frag, body);
  body = Allocate::make(a_frag, body);
  body = Allocate::make(acc, body);
  body = Allocate::make(b_shared, body);
  body = Allocate::make(a_shared, body);
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
  return {"by", "bx", "tx", "k_outer", "a", "a_z", "a_e", "a_ld", "b", "b_z", "b_e", "b_ld", "k", "i_frag", "j_frag", "i", "j"};
}

std::vector<std::string> Conv2dNhwcTemplate::buffer_names() const {
  return {"Output", "Input", "Filter", "A_shared", "B_shared", "Output_local", "A_frag", "B_frag", "A_ld", "B_ld"};
}

}  // namespace cutune
