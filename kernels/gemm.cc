#include "kernels/gemm.h"

#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

namespace {

// The knob values one configuration resolves to, with the derived sizes.
struct GemmParams {
  int bm, bn, bk, tm, tn, warp_n, fm, fn, vec, pad;
  bool double_buffer, unroll_k;
  int threads_m() const { return bm / tm; }
  int threads_n() const { return bn / tn; }
  int threads() const { return threads_m() * threads_n(); }
};

GemmParams params_of(const Config& c) {
  GemmParams p{};
  p.bm = int(c.get("block_m"));
  p.bn = int(c.get("block_n"));
  p.bk = int(c.get("block_k"));
  p.tm = int(c.get("thread_m"));
  p.tn = int(c.get("thread_n"));
  p.warp_n = int(c.get("warp_n"));
  p.fm = int(c.get("frag_m"));
  p.fn = int(c.get("frag_n"));
  p.vec = int(c.get("vec_load"));
  p.pad = int(c.get("smem_pad"));
  p.double_buffer = c.get("double_buffer") != 0;
  p.unroll_k = c.get("unroll_k") != 0;
  return p;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Expr i32(int64_t v) { return IntImm::make(Type::i32(), v); }

// Copies one operand tile between global memory, registers and shared memory. The tile is
// `rows` × `cols` of a row-major global matrix whose rows are `ld` elements long, read in
// vectors of `vec` along the columns; `transpose` stores it to shared memory as [col][row].
struct TileCopy {
  std::string prefix;  // "a" or "b": names of its variables
  Buffer global, regs, shared;
  int rows, cols, vec, threads;
  int64_t ld;                 // global row length
  int64_t row_limit, col_limit;  // global extents, for the tail guards
  Expr row0;                  // first global row of the tile (block-dependent)
  bool transpose;
  int shared_ld;              // shared row length (padded)
  bool guard_rows = true;     // false where the tile size divides the extent exactly
  bool guard_cols = true;

  int vectors() const { return rows * cols / vec; }
  int per_thread() const { return int(ceil_div(vectors(), threads)); }

  // Loop over this thread's vectors, with the tile-relative row and column of each.
  Stmt for_each_vector(const Expr& t, const std::function<Stmt(Expr r, Expr row, Expr col)>& f) const {
    Expr r = int_var(prefix + "_ld");
    Expr v = r * threads + t;
    int per_row = cols / vec;
    Expr row = v / per_row;
    Expr col = v % per_row * vec;
    Stmt body = f(r, row, col);
    if (vectors() % threads != 0) body = IfThenElse::make(v < vectors(), body);
    return For::make(prefix + "_ld", 0, per_thread(), ForKind::unrolled, body);
  }

  // Global -> registers for the K step `k0` (first global column of the tile).
  Stmt load(const Expr& t, const Expr& k0) const {
    return for_each_vector(t, [&](Expr r, Expr row, Expr col) {
      Expr grow = row0 + row;
      Expr gcol = k0 + col;
      Stmt copy = Store::make(regs, r * vec, Load::make(global, grow * i32(ld) + gcol, vec));
      Expr e = int_var(prefix + "_z");
      Stmt zero = For::make(prefix + "_z", 0, vec, ForKind::unrolled,
                            Store::make(regs, r * vec + e, f32(0.0)));
      std::vector<Expr> in_bounds;
      if (guard_rows) in_bounds.push_back(grow < i32(row_limit));
      if (guard_cols) in_bounds.push_back(gcol < i32(col_limit));
      if (in_bounds.empty()) return copy;
      return IfThenElse::make(all_of(in_bounds), copy, zero);
    });
  }

  // Registers -> shared memory stage `stage_offset`.
  Stmt store(const Expr& t, const Expr& stage_offset) const {
    return for_each_vector(t, [&](Expr r, Expr row, Expr col) {
      if (!transpose) {
        return Store::make(shared, stage_offset + row * shared_ld + col,
                           Load::make(regs, r * vec, vec));
      }
      Expr e = int_var(prefix + "_e");
      return For::make(prefix + "_e", 0, vec, ForKind::unrolled,
                       Store::make(shared, stage_offset + (col + e) * shared_ld + row,
                                   Load::make(regs, r * vec + e)));
    });
  }
};

}  // namespace

GemmTemplate::GemmTemplate(int64_t m, int64_t n, int64_t k, GemmLayout layout)
    : m_(m), n_(n), k_(k), layout_(layout) {
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  if (m < 1 || n < 1 || k < 1) {
    throw TaskError(fmt::format("gemm needs M, N, K >= 1, got {},{},{}", m, n, k));
  }
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim || m * k >= INT32_MAX || k * n >= INT32_MAX ||
      m * n >= INT32_MAX) {
    throw TaskError(fmt::format("gemm {}x{}x{} is too large: each matrix must have fewer than "
                                "2^31 elements",
                                m, n, k));
  }
  define_space();
}

void GemmTemplate::define_space() {
  space_.define_choice("block_m", {16, 32, 64, 128, 256});
  space_.define_choice("block_n", {16, 32, 64, 128, 256});
  space_.define_choice("block_k", {4, 8, 16, 32});
  space_.define_choice("thread_m", {1, 2, 4, 8, 16});
  space_.define_choice("thread_n", {1, 2, 4, 8, 16});
  space_.define_choice("warp_n", {0, 2, 4, 8, 16});  // 0: threads in row-major order
  space_.define_choice("frag_m", {1, 2, 4});
  space_.define_choice("frag_n", {1, 2, 4});
  space_.define_choice("vec_load", {1, 2, 4});
  space_.define_choice("smem_pad", {0, 1, 4});
  space_.define_bool("double_buffer");
  space_.define_bool("unroll_k");

  space_.add_constraint("block tile divisible by the thread tile", [](const Config& c) {
    return c.get("block_m") % c.get("thread_m") == 0 && c.get("block_n") % c.get("thread_n") == 0;
  });
  space_.add_constraint("32 to 1024 threads per block, whole warps", [](const Config& c) {
    int64_t t = (c.get("block_m") / c.get("thread_m")) * (c.get("block_n") / c.get("thread_n"));
    return t >= 32 && t <= 1024 && t % 32 == 0;
  });
  space_.add_constraint("warp layout fits the thread grid", [](const Config& c) {
    int64_t wn = c.get("warp_n");
    if (wn == 0) return true;
    int64_t tm = c.get("block_m") / c.get("thread_m");
    int64_t tn = c.get("block_n") / c.get("thread_n");
    return tn % wn == 0 && tm % (32 / wn) == 0;
  });
  space_.add_constraint("fragment chunks divide the thread tile", [](const Config& c) {
    return c.get("thread_m") % c.get("frag_m") == 0 && c.get("thread_n") % c.get("frag_n") == 0;
  });
  space_.add_constraint("at most 128 accumulators per thread", [](const Config& c) {
    return c.get("thread_m") * c.get("thread_n") <= 128;
  });
  bool nn = layout_ == GemmLayout::nn;
  int64_t k = k_, n = n_;
  space_.add_constraint("load vectors divide the tiles and the matrix rows",
                        [nn, k, n](const Config& c) {
                          int64_t v = c.get("vec_load");
                          bool a_ok = c.get("block_k") % v == 0 && k % v == 0;
                          bool b_ok = nn ? (c.get("block_n") % v == 0 && n % v == 0)
                                         : (c.get("block_k") % v == 0);
                          return a_ok && b_ok;
                        });
  space_.add_constraint("padded shared rows keep vector alignment", [nn](const Config& c) {
    int64_t pad = c.get("smem_pad");
    int64_t b_align = nn ? std::max(c.get("frag_n"), c.get("vec_load")) : c.get("frag_n");
    return (c.get("block_m") + pad) % c.get("frag_m") == 0 &&
           (c.get("block_n") + pad) % b_align == 0;
  });
}

std::vector<Config> GemmTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) {
    nlohmann::json j;
    j["knobs"] = std::move(knobs);
    Config c = space_.from_json(j);
    if (space_.is_valid(c)) out.push_back(c);
  };
  // The classic hand-tuned SGEMM: 128x128x8 block, 8x8 per thread as 2x2 chunks of 4x4,
  // warps of 4x8 threads, float4 loads, padded double-buffered shared memory.
  add({{"block_m", 128}, {"block_n", 128}, {"block_k", 8}, {"thread_m", 8}, {"thread_n", 8},
       {"warp_n", 8}, {"frag_m", 4}, {"frag_n", 4}, {"vec_load", 4}, {"smem_pad", 4},
       {"double_buffer", 1}, {"unroll_k", 1}});
  // A smaller-tile variant for skinny or small problems.
  add({{"block_m", 64}, {"block_n", 64}, {"block_k", 16}, {"thread_m", 4}, {"thread_n", 4},
       {"warp_n", 8}, {"frag_m", 4}, {"frag_n", 4}, {"vec_load", 4}, {"smem_pad", 4},
       {"double_buffer", 1}, {"unroll_k", 1}});
  return out;
}

std::vector<std::string> GemmTemplate::loop_names() const {
  return {"by", "bx",   "tx",  "k_outer", "k",    "i_frag", "j_frag", "i",
          "j",  "a_ld", "a_z", "a_e",     "b_ld", "b_z",    "b_e"};
}

std::vector<std::string> GemmTemplate::buffer_names() const {
  return {"A", "B", "C", "A_shared", "B_shared", "C_local", "A_frag", "B_frag", "A_ld", "B_ld"};
}

std::vector<TensorSpec> GemmTemplate::tensors() const {
  return {{"C", Type::f32(), m_ * n_, true},
          {"A", Type::f32(), m_ * k_, false},
          {"B", Type::f32(), k_ * n_, false}};
}

void GemmTemplate::reference(std::vector<std::vector<float>>& t) const {
  std::vector<float>& c = t[0];
  const std::vector<float>& a = t[1];
  const std::vector<float>& b = t[2];
  std::vector<double> row(n_);
  for (int64_t i = 0; i < m_; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int64_t kk = 0; kk < k_; ++kk) {
      double av = a[i * k_ + kk];
      if (layout_ == GemmLayout::nn) {
        const float* brow = &b[kk * n_];
        for (int64_t j = 0; j < n_; ++j) row[j] += av * brow[j];
      } else {
        for (int64_t j = 0; j < n_; ++j) row[j] += av * b[j * k_ + kk];
      }
    }
    for (int64_t j = 0; j < n_; ++j) c[i * n_ + j] = float(row[j]);
  }
}

Kernel GemmTemplate::build(const Config& config) const {
  const GemmParams p = params_of(config);
  const bool nn = layout_ == GemmLayout::nn;
  const int threads = p.threads();
  const int tm_threads = p.threads_m(), tn_threads = p.threads_n();
  const int stages = p.double_buffer ? 2 : 1;
  const int lda_s = p.bm + p.pad;  // A_shared is [stage][k][m]
  const int ldb_s = p.bn + p.pad;  // B_shared is [stage][k][n]
  const int64_t k_steps = ceil_div(k_, p.bk);

  Buffer a = Buffer::make("A", Type::f32(), MemoryScope::global, m_ * k_, true);
  Buffer b = Buffer::make("B", Type::f32(), MemoryScope::global, k_ * n_, true);
  Buffer c = Buffer::make("C", Type::f32(), MemoryScope::global, m_ * n_);
  Buffer a_shared = Buffer::make("A_shared", Type::f32(), MemoryScope::shared,
                                 int64_t{stages} * p.bk * lda_s);
  Buffer b_shared = Buffer::make("B_shared", Type::f32(), MemoryScope::shared,
                                 int64_t{stages} * p.bk * ldb_s);
  Buffer acc = Buffer::make("C_local", Type::f32(), MemoryScope::local, p.tm * p.tn);
  Buffer a_frag = Buffer::make("A_frag", Type::f32(), MemoryScope::local, p.tm);
  Buffer b_frag = Buffer::make("B_frag", Type::f32(), MemoryScope::local, p.tn);

  Expr t = int_var("tx"), bx = int_var("bx"), by = int_var("by");
  Expr thread_row = int_var("thread_row"), thread_col = int_var("thread_col");

  TileCopy a_copy{"a", a, Buffer(), a_shared, p.bm, p.bk, p.vec, threads, k_, m_, k_,
                  by * p.bm, true, lda_s};
  a_copy.regs = Buffer::make("A_ld", Type::f32(), MemoryScope::local,
                             int64_t{a_copy.per_thread()} * p.vec);
  TileCopy b_copy = nn ? TileCopy{"b", b, Buffer(), b_shared, p.bk, p.bn, p.vec, threads, n_,
                                  k_, n_, Expr(0), false, ldb_s}
                       : TileCopy{"b", b, Buffer(), b_shared, p.bn, p.bk, p.vec, threads, k_,
                                  n_, k_, bx * p.bn, true, ldb_s};
  // K-direction guards are needed only for a partial last K step; the M and N guards are
  // dropped by the simplifier where the block tile divides the extent.
  bool k_tail = k_ % p.bk != 0;
  a_copy.guard_cols = k_tail;
  (nn ? b_copy.guard_rows : b_copy.guard_cols) = k_tail;
  b_copy.regs = Buffer::make("B_ld", Type::f32(), MemoryScope::local,
                             int64_t{b_copy.per_thread()} * p.vec);

  // In layout nn the B tile's rows are K and its columns N, so its "k0" runs along rows.
  auto load_tiles = [&](const Expr& k_step) {
    Expr k0 = k_step * p.bk;
    Stmt la = a_copy.load(t, k0);
    Stmt lb;
    if (nn) {
      TileCopy shifted = b_copy;
      shifted.row0 = k0;
      lb = shifted.load(t, bx * p.bn);
    } else {
      lb = b_copy.load(t, k0);
    }
    return Block::make({la, lb});
  };
  auto store_tiles = [&](const Expr& stage) {
    return Block::make({a_copy.store(t, stage * (p.bk * lda_s)),
                        b_copy.store(t, stage * (p.bk * ldb_s))});
  };

  // Rows of this thread's tile: chunk i / frag_m of frag_m consecutive rows, chunks strided
  // by the thread grid.
  auto tile_row = [&](const Expr& i) {
    return i / p.fm * (tm_threads * p.fm) + thread_row * p.fm + i % p.fm;
  };
  auto tile_col = [&](const Expr& j) {
    return j / p.fn * (tn_threads * p.fn) + thread_col * p.fn + j % p.fn;
  };

  auto compute = [&](const Expr& stage) {
    Expr kk = int_var("k");
    Expr ii = int_var("i_frag"), jj = int_var("j_frag");
    Stmt load_a = For::make(
        "i_frag", 0, p.tm / p.fm, ForKind::unrolled,
        Store::make(a_frag, ii * p.fm,
                    Load::make(a_shared,
                               stage * (p.bk * lda_s) + kk * lda_s + tile_row(ii * p.fm),
                               p.fm)));
    Stmt load_b = For::make(
        "j_frag", 0, p.tn / p.fn, ForKind::unrolled,
        Store::make(b_frag, jj * p.fn,
                    Load::make(b_shared,
                               stage * (p.bk * ldb_s) + kk * ldb_s + tile_col(jj * p.fn),
                               p.fn)));
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
    main_loop = For::make("k_outer", 0, i32(k_steps), ForKind::serial,
                          Block::make({load_tiles(ko), store_tiles(0), Sync::make(),
                                       compute(0), Sync::make()}));
  } else {
    Expr has_next = ko + 1 < i32(k_steps);
    Stmt prologue = Block::make({load_tiles(0), store_tiles(0), Sync::make()});
    Stmt loop = For::make(
        "k_outer", 0, i32(k_steps), ForKind::serial,
        Block::make({IfThenElse::make(has_next, load_tiles(ko + 1)), compute(ko % 2),
                     IfThenElse::make(has_next, store_tiles((ko + 1) % 2)), Sync::make()}));
    main_loop = Block::make({prologue, loop});
  }

  Expr z = int_var("i");
  Stmt init = For::make("i", 0, p.tm * p.tn, ForKind::unrolled, Store::make(acc, z, f32(0.0)));

  // Epilogue: vector stores of frag_n columns when C's rows keep them aligned.
  int store_vec = (n_ % p.fn == 0) ? p.fn : 1;
  Expr i = int_var("i"), jv = int_var("j");
  Expr grow = by * p.bm + tile_row(i);
  Expr gcol = bx * p.bn + tile_col(jv * store_vec);
  Stmt write = IfThenElse::make(
      grow < i32(m_) && gcol < i32(n_),
      Store::make(c, grow * i32(n_) + gcol, Load::make(acc, i * p.tn + jv * store_vec, store_vec)));
  Stmt epilogue = For::make("i", 0, p.tm, ForKind::unrolled,
                            For::make("j", 0, p.tn / store_vec, ForKind::unrolled, write));

  Expr thread_row_value, thread_col_value;
  if (p.warp_n == 0) {
    thread_row_value = t / tn_threads;
    thread_col_value = t % tn_threads;
  } else {
    int warp_m = 32 / p.warp_n;
    int warps_n = tn_threads / p.warp_n;
    Expr warp = t / 32, lane = t % 32;
    thread_row_value = warp / warps_n * warp_m + lane / p.warp_n;
    thread_col_value = warp % warps_n * p.warp_n + lane % p.warp_n;
  }

  Stmt body = Block::make({init, main_loop, epilogue});
  body = Allocate::make(b_copy.regs, body);
  body = Allocate::make(a_copy.regs, body);
  body = Allocate::make(b_frag, body);
  body = Allocate::make(a_frag, body);
  body = Allocate::make(acc, body);
  body = Allocate::make(b_shared, body);
  body = Allocate::make(a_shared, body);
  body = LetStmt::make("thread_col", thread_col_value, body);
  body = LetStmt::make("thread_row", thread_row_value, body);
  body = For::make("tx", 0, threads, ForKind::thread_x, body);
  body = For::make("bx", 0, i32(ceil_div(n_, p.bn)), ForKind::block_x, body);
  body = For::make("by", 0, i32(ceil_div(m_, p.bm)), ForKind::block_y, body);

  Kernel kernel;
  kernel.name = name();
  kernel.buffers = {c, a, b};
  kernel.body = body;
  return kernel;
}

}  // namespace cutune
