#include "kernels/schedule_helpers.h"

#include <algorithm>

#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

void reference_gemm(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c,
                    int64_t m, int64_t n, int64_t k, bool b_transposed) {
  std::vector<double> row(n);
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int64_t kk = 0; kk < k; ++kk) {
      double av = a[i * k + kk];
      if (!b_transposed) {
        const float* brow = &b[kk * n];
        for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
      } else {
        for (int64_t j = 0; j < n; ++j) row[j] += av * b[j * k + kk];
      }
    }
    for (int64_t j = 0; j < n; ++j) c[i * n + j] = float(row[j]);
  }
}

void add_if_valid(const ConfigSpace& space, nlohmann::json knobs, std::vector<Config>& out) {
  nlohmann::json j;
  j["knobs"] = std::move(knobs);
  Config c = space.from_json(j);
  if (space.is_valid(c)) out.push_back(c);
}

int64_t patch_extent(int64_t tile, int64_t taps, const ConvShape& s) {
  return (tile - 1) * s.stride + (taps - 1) * s.dilation + 1;
}

int64_t max_threads_along(const std::vector<int64_t>& choices, int64_t extent) {
  int64_t best = 1;
  for (int64_t t : choices) {
    if (t < 2 * extent) best = std::max(best, t);
  }
  return best;
}

Stmt cooperative(const std::string& var, int64_t elements, int64_t threads, const Expr& t,
                 const std::function<Stmt(Expr v)>& body) {
  Expr r = int_var(var);
  Expr v = r * threads + t;
  Stmt s = body(v);
  if (elements % threads != 0) s = IfThenElse::make(v < elements, s);
  return For::make(var, 0, ceil_div(elements, threads), ForKind::unrolled, s);
}

Stmt VectorTile::for_each_vector(const Expr& t,
                                 const std::function<Stmt(Expr r, Expr row, Expr col)>& f) const {
  const int64_t per_row = cols / vec;
  return cooperative(prefix + "_ld", vectors(), threads, t, [&](Expr v) {
    return f(int_var(prefix + "_ld"), v / per_row, v % per_row * vec);
  });
}

Stmt VectorTile::zero(const Expr& r) const {
  Expr e = int_var(prefix + "_z");
  return For::make(prefix + "_z", 0, vec, ForKind::unrolled,
                   Store::make(regs, r * vec + e, f32(0.0)));
}

Stmt VectorTile::store(const Expr& t, const Expr& stage_offset) const {
  return for_each_vector(t, [&](Expr r, Expr row, Expr col) {
    if (!transpose) {
      return Store::make(shared, stage_offset + row * shared_ld + col,
                         Load::make(regs, r * vec, int(vec)));
    }
    Expr e = int_var(prefix + "_e");
    return For::make(prefix + "_e", 0, vec, ForKind::unrolled,
                     Store::make(shared, stage_offset + (col + e) * shared_ld + row,
                                 Load::make(regs, r * vec + e)));
  });
}

Expr RegisterTile::tile_row(const Expr& i) const {
  return i / fm * (threads_m * fm) + thread_row * fm + i % fm;
}

Expr RegisterTile::tile_col(const Expr& j) const {
  return j / fn * (threads_n * fn) + thread_col * fn + j % fn;
}

Stmt RegisterTile::init() const {
  Expr z = int_var("i");
  return For::make("i", 0, tm * tn, ForKind::unrolled, Store::make(acc, z, f32(0.0)));
}

Stmt RegisterTile::compute(const Expr& stage) const {
  Expr kk = int_var("k");
  Expr ii = int_var("i_frag"), jj = int_var("j_frag");
  Stmt load_a = For::make(
      "i_frag", 0, tm / fm, ForKind::unrolled,
      Store::make(
          a_frag, ii * fm,
          Load::make(a_shared, stage * (bk * lda_s) + kk * lda_s + tile_row(ii * fm), int(fm))));
  Stmt load_b = For::make(
      "j_frag", 0, tn / fn, ForKind::unrolled,
      Store::make(
          b_frag, jj * fn,
          Load::make(b_shared, stage * (bk * ldb_s) + kk * ldb_s + tile_col(jj * fn), int(fn))));
  Expr i = int_var("i"), j = int_var("j");
  Expr slot = i * tn + j;
  Stmt fma =
      Store::make(acc, slot, Load::make(acc, slot) + Load::make(a_frag, i) * Load::make(b_frag, j));
  Stmt outer =
      For::make("i", 0, tm, ForKind::unrolled, For::make("j", 0, tn, ForKind::unrolled, fma));
  return For::make("k", 0, bk, unroll_k ? ForKind::unrolled : ForKind::serial,
                   Block::make({load_a, load_b, outer}));
}

Stmt RegisterTile::main_loop(int64_t k_steps, bool double_buffer,
                             const std::function<Stmt(Expr k0)>& load,
                             const std::function<Stmt(Expr stage)>& store) const {
  Expr ko = int_var("k_outer");
  if (!double_buffer) {
    return For::make(
        "k_outer", 0, i32(k_steps), ForKind::serial,
        Block::make({load(ko * bk), store(0), Sync::make(), compute(0), Sync::make()}));
  }
  Expr has_next = ko + 1 < i32(k_steps);
  Stmt prologue = Block::make({load(0), store(0), Sync::make()});
  Stmt loop =
      For::make("k_outer", 0, i32(k_steps), ForKind::serial,
                Block::make({IfThenElse::make(has_next, load((ko + 1) * bk)), compute(ko % 2),
                             IfThenElse::make(has_next, store((ko + 1) % 2)), Sync::make()}));
  return Block::make({prologue, loop});
}

Stmt RegisterTile::epilogue(const Buffer& c, const Expr& row0, const Expr& col0, const Expr& m,
                            int64_t n) const {
  const int64_t store_vec = (n % fn == 0) ? fn : 1;
  Expr i = int_var("i"), jv = int_var("j");
  Expr grow = row0 + tile_row(i);
  Expr gcol = col0 + tile_col(jv * store_vec);
  Stmt write =
      IfThenElse::make(grow < m && gcol < i32(n),
                       Store::make(c, grow * i32(n) + gcol,
                                   Load::make(acc, i * tn + jv * store_vec, int(store_vec))));
  return For::make("i", 0, tm, ForKind::unrolled,
                   For::make("j", 0, tn / store_vec, ForKind::unrolled, write));
}

Stmt RegisterTile::allocate(Stmt body, const Buffer& a_regs, const Buffer& b_regs) const {
  body = Allocate::make(b_regs, body);
  body = Allocate::make(a_regs, body);
  body = Allocate::make(b_frag, body);
  body = Allocate::make(a_frag, body);
  body = Allocate::make(acc, body);
  body = Allocate::make(b_shared, body);
  return Allocate::make(a_shared, body);
}

}  // namespace cutune
