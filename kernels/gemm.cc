#include "kernels/gemm.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/schedule_helpers.h"
#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

namespace {

// The knob values one configuration resolves to, with the derived sizes.
struct GemmParams {
  int bm, bn, bk, tm, tn, warp_n, fm, fn, vec, pad, min_blocks;
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
  p.min_blocks = int(c.get("min_blocks"));
  return p;
}

// An SM's shared memory that blocks may take together (sm_80/sm_90 opt-in), bytes.
constexpr int64_t kSmSharedBytes = 227 * 1024;

// One operand tile of a row-major global matrix whose rows are `ld` elements long: a
// VectorTile (see schedule_helpers.h) whose global -> registers copy is guarded against the
// matrix's extents.
struct TileCopy {
  VectorTile tile;
  Buffer global;
  int64_t ld;                    // global row length
  Expr row_limit, col_limit;     // global extents, for the tail guards
  Expr row0;                     // first global row of the tile (block-dependent)
  bool guard_rows = true;        // false where the tile size divides the extent exactly
  bool guard_cols = true;

  // Global -> registers for the K step `k0` (first global column of the tile).
  Stmt load(const Expr& t, const Expr& k0) const {
    return tile.for_each_vector(t, [&](Expr r, Expr row, Expr col) {
      Expr grow = row0 + row;
      Expr gcol = k0 + col;
      Stmt copy = Store::make(tile.regs, r * tile.vec,
                              Load::make(global, grow * i32(ld) + gcol, int(tile.vec)));
      std::vector<Expr> in_bounds;
      if (guard_rows) in_bounds.push_back(grow < row_limit);
      if (guard_cols) in_bounds.push_back(gcol < col_limit);
      if (in_bounds.empty()) return copy;
      return IfThenElse::make(all_of(in_bounds), copy, tile.zero(r));
    });
  }
};

}  // namespace

GemmTemplate::GemmTemplate(int64_t m, int64_t n, int64_t k, GemmLayout layout, bool runtime_m,
                           Epilogue epilogue)
    : m_(m), n_(n), k_(k), layout_(layout), runtime_m_(runtime_m), epilogue_(std::move(epilogue)) {
  check_gemm_shape(op(), m, n, k);
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
  space_.define_choice("smem_pad", {0, 1, 4, kSmemPadConflictFree});
  space_.define_bool("double_buffer");
  space_.define_bool("unroll_k");
  space_.define_choice("min_blocks", {1, 2}, 1);

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
  space_.add_constraint(
      "load vectors divide the tiles and the matrix rows", [nn, k, n](const Config& c) {
        int64_t v = c.get("vec_load");
        bool a_ok = c.get("block_k") % v == 0 && k % v == 0;
        bool b_ok = nn ? (c.get("block_n") % v == 0 && n % v == 0) : (c.get("block_k") % v == 0);
        return a_ok && b_ok;
      });
  const GemmLayout layout = layout_;
  space_.add_constraint("padded shared rows keep vector alignment", [nn, layout](const Config& c) {
    GemmSharedRows rows = gemm_shared_rows(c, layout);
    int64_t b_align = nn ? std::max(c.get("frag_n"), c.get("vec_load")) : c.get("frag_n");
    return rows.a % c.get("frag_m") == 0 && rows.b % b_align == 0;
  });
  // A second block per SM only where its shared memory fits beside the first, and where the
  // register cap it implies (64K / (2 · threads)) still holds the accumulators.
  space_.add_constraint("min_blocks blocks fit an SM", [layout](const Config& c) {
    if (c.get("min_blocks") == 1) return true;
    GemmSharedRows rows = gemm_shared_rows(c, layout);
    int64_t stages = c.get("double_buffer") ? 2 : 1;
    int64_t shared = stages * c.get("block_k") * (rows.a + rows.b) * 4;
    int64_t threads =
        (c.get("block_m") / c.get("thread_m")) * (c.get("block_n") / c.get("thread_n"));
    int64_t cap = std::min<int64_t>(255, 65536 / (c.get("min_blocks") * threads) / 8 * 8);
    return c.get("min_blocks") * shared <= kSmSharedBytes &&
           c.get("thread_m") * c.get("thread_n") + 32 <= cap;
  });
}

std::vector<Config> GemmTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) { add_if_valid(space_, std::move(knobs), out); };
  // The classic hand-tuned SGEMM: 128x128x8 block, 8x8 per thread as 2x2 chunks of 4x4,
  // warps of 4x8 threads, float4 loads, padded double-buffered shared memory.
  add({{"block_m", 128},
       {"block_n", 128},
       {"block_k", 8},
       {"thread_m", 8},
       {"thread_n", 8},
       {"warp_n", 8},
       {"frag_m", 4},
       {"frag_n", 4},
       {"vec_load", 4},
       {"smem_pad", 4},
       {"double_buffer", 1},
       {"unroll_k", 1}});
  // A smaller-tile variant for skinny or small problems.
  add({{"block_m", 64},
       {"block_n", 64},
       {"block_k", 16},
       {"thread_m", 4},
       {"thread_n", 4},
       {"warp_n", 8},
       {"frag_m", 4},
       {"frag_n", 4},
       {"vec_load", 4},
       {"smem_pad", 4},
       {"double_buffer", 1},
       {"unroll_k", 1}});
  return out;
}

std::vector<std::string> GemmTemplate::loop_names() const {
  return {"by", "bx",   "tx",  "k_outer", "k",    "i_frag", "j_frag", "i",
          "j",  "a_ld", "a_z", "a_e",     "b_ld", "b_z",    "b_e"};
}

std::vector<std::string> GemmTemplate::buffer_names() const {
  return {"A", "B", "C", "A_shared", "B_shared", "C_local", "A_frag", "B_frag", "A_ld", "B_ld"};
}

namespace {

Buffer c_buffer(int64_t m, int64_t n) {
  return Buffer::make("C", Type::f32(), MemoryScope::global, m * n);
}

}  // namespace

std::vector<TensorSpec> GemmTemplate::tensors() const {
  const OutputEpilogue ep(epilogue_, c_buffer(m_, n_), m_, n_, DType::Float32);
  TensorSpec c{"C", Type::f32(), m_ * n_, true};
  ep.mark_output(c);
  std::vector<TensorSpec> out = {c, {"A", Type::f32(), m_ * k_, false},
                                 {"B", Type::f32(), k_ * n_, false}};
  for (TensorSpec& t : ep.tensors()) out.push_back(std::move(t));
  return out;
}

std::vector<ScalarSpec> GemmTemplate::scalars() const {
  return OutputEpilogue(epilogue_, c_buffer(m_, n_), m_, n_, DType::Float32).scalar_specs();
}

BaselineSpec GemmTemplate::baseline() const {
  const OutputEpilogue ep(epilogue_, c_buffer(m_, n_), m_, n_, DType::Float32);
  GemmBaseline g;
  g.m = m_, g.n = n_, g.k = k_;
  g.b_transposed = layout_ == GemmLayout::nt;
  return BaselineSpec::of(ep.baseline(g, 3));
}

void GemmTemplate::reference(std::vector<std::vector<float>>& t) const {
  const std::vector<float> c_initial = epilogue_.has(EpilogueOp::beta) ? t[0] : std::vector<float>{};
  reference_gemm(t[1], t[2], t[0], m_, n_, k_, /*b_transposed=*/layout_ != GemmLayout::nn);
  std::vector<const std::vector<float>*> extra;
  for (size_t i = 3; i < t.size(); ++i) extra.push_back(&t[i]);
  OutputEpilogue(epilogue_, c_buffer(m_, n_), m_, n_, DType::Float32)
      .reference(t[0], c_initial, extra);
}

Kernel GemmTemplate::build(const Config& config) const {
  const GemmParams p = params_of(config);
  const bool nn = layout_ == GemmLayout::nn;
  const int threads = p.threads();
  const int tm_threads = p.threads_m(), tn_threads = p.threads_n();
  const int stages = p.double_buffer ? 2 : 1;
  const GemmSharedRows rows = gemm_shared_rows(config, layout_);
  const int lda_s = int(rows.a);  // A_shared is [stage][k][m]
  const int ldb_s = int(rows.b);  // B_shared is [stage][k][n]
  const int64_t k_steps = ceil_div(k_, p.bk);

  Buffer a = Buffer::make("A", Type::f32(), MemoryScope::global, m_ * k_, true);
  Buffer b = Buffer::make("B", Type::f32(), MemoryScope::global, k_ * n_, true);
  Buffer c = c_buffer(m_, n_);
  const OutputEpilogue ep(epilogue_, c, m_, n_, DType::Float32);
  Buffer a_shared =
      Buffer::make("A_shared", Type::f32(), MemoryScope::shared, int64_t{stages} * p.bk * lda_s);
  Buffer b_shared =
      Buffer::make("B_shared", Type::f32(), MemoryScope::shared, int64_t{stages} * p.bk * ldb_s);
  Buffer acc = Buffer::make("C_local", Type::f32(), MemoryScope::local, p.tm * p.tn);
  Buffer a_frag = Buffer::make("A_frag", Type::f32(), MemoryScope::local, p.tm);
  Buffer b_frag = Buffer::make("B_frag", Type::f32(), MemoryScope::local, p.tn);

  Expr t = int_var("tx"), bx = int_var("bx"), by = int_var("by");
  // The rows of A and C: the constant M, or the kernel's scalar M (a run-time M, whose rows
  // the simplifier can never prove inside: every row is guarded).
  const Expr m_rows = runtime_m_ ? int_var("M") : i32(m_);
  Expr thread_row = int_var("thread_row"), thread_col = int_var("thread_col");

  TileCopy a_copy{{"a", p.bm, p.bk, p.vec, threads, Buffer(), a_shared, true, lda_s},
                  a,
                  k_,
                  m_rows,
                  i32(k_),
                  by * p.bm};
  a_copy.tile.regs =
      Buffer::make("A_ld", Type::f32(), MemoryScope::local, a_copy.tile.per_thread() * p.vec);
  TileCopy b_copy =
      nn ? TileCopy{{"b", p.bk, p.bn, p.vec, threads, Buffer(), b_shared, false, ldb_s},
                    b,
                    n_,
                    i32(k_),
                    i32(n_),
                    Expr(0)}
         : TileCopy{{"b", p.bn, p.bk, p.vec, threads, Buffer(), b_shared, true, ldb_s},
                    b,
                    k_,
                    i32(n_),
                    i32(k_),
                    bx * p.bn};
  // K-direction guards are needed only for a partial last K step; the M and N guards are
  // dropped by the simplifier where the block tile divides the extent.
  bool k_tail = k_ % p.bk != 0;
  a_copy.guard_cols = k_tail;
  (nn ? b_copy.guard_rows : b_copy.guard_cols) = k_tail;
  b_copy.tile.regs =
      Buffer::make("B_ld", Type::f32(), MemoryScope::local, b_copy.tile.per_thread() * p.vec);

  // In layout nn the B tile's rows are K and its columns N, so its "k0" runs along rows.
  auto load_tiles = [&](const Expr& k0) {
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
    return Block::make({a_copy.tile.store(t, stage * (p.bk * lda_s)),
                        b_copy.tile.store(t, stage * (p.bk * ldb_s))});
  };

  const RegisterTile tile{
      p.bm,  p.bn,       p.bk,     p.tm,     p.tn, p.fm,   p.fn,   tm_threads, tn_threads, lda_s,
      ldb_s, p.unroll_k, a_shared, b_shared, acc,  a_frag, b_frag, thread_row, thread_col};
  Stmt main_loop = tile.main_loop(k_steps, p.double_buffer, load_tiles, store_tiles);
  Stmt epilogue = tile.epilogue(c, by * p.bm, bx * p.bn, m_rows, n_);
  if (!ep.empty()) {
    // The fused epilogue rewrites the accumulators in registers; the store is as without.
    Expr i = int_var("i"), j = int_var("j");
    Stmt apply = For::make(
        "i", 0, p.tm, ForKind::unrolled,
        For::make("j", 0, p.tn, ForKind::unrolled,
                  ep.in_place(acc, i * p.tn + j, by * p.bm + tile.tile_row(i),
                              bx * p.bn + tile.tile_col(j))));
    epilogue = Block::make({apply, epilogue});
  }

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

  Stmt body = Block::make({tile.init(), main_loop, epilogue});
  body = tile.allocate(body, a_copy.tile.regs, b_copy.tile.regs);
  body = LetStmt::make("thread_col", thread_col_value, body);
  body = LetStmt::make("thread_row", thread_row_value, body);
  body = For::make("tx", 0, threads, ForKind::thread_x, body);
  body = For::make("bx", 0, i32(ceil_div(n_, p.bn)), ForKind::block_x, body);
  body = For::make("by", 0, i32(ceil_div(m_, p.bm)), ForKind::block_y, body);

  Kernel kernel;
  kernel.name = name();
  kernel.buffers = {c, a, b};
  for (const Buffer& extra : ep.buffers()) kernel.buffers.push_back(extra);
  kernel.scalars = ep.scalars();
  kernel.body = body;
  if (runtime_m_) kernel.scalars.push_back(m_rows);  // no epilogue goes with a run-time M
  kernel.min_blocks = p.min_blocks > 1 ? p.min_blocks : 0;  // 1: no promise, as before the knob
  return kernel;
}

Template::MRule GemmTemplate::runtime_m_rule(const Config& config) const {
  // The grid is (tiles of N) x (tiles of M) along (x, y): y follows M, a block a tile row.
  return {.axis = 1,
          .rows = uint32_t(params_of(config).bm),
          .row_blocks = 1,
          .row_elements = {{"A", k_}, {"C", n_}}};
}

int64_t conflict_free_row_length(int64_t rows, int64_t block_k) {
  const int64_t residue = 32 / block_k;  // L ≡ residue (mod 32): see gemm.h
  return rows + ((residue - rows) % 32 + 32) % 32;
}

GemmSharedRows gemm_shared_rows(const Config& config, GemmLayout layout) {
  const int64_t bm = config.get("block_m"), bn = config.get("block_n");
  const int64_t pad = config.get("smem_pad");
  if (pad != kSmemPadConflictFree) return {bm + pad, bn + pad};
  const int64_t bk = config.get("block_k");
  return {conflict_free_row_length(bm, bk),
          layout == GemmLayout::nn ? bn : conflict_free_row_length(bn, bk)};
}

namespace {

const FamilyRegistrar kGemmSimt{
    {.computation = "gemm",
     .family = "simt",
     .shape_help = "M,N,K",
     .description = "C[M,N] = A[M,K]·B on FMA units: B [K,N] (nn) or stored [N,K] (nt)",
     .native_arch = kAnyArch,
     .supported = combinations("gemm", "simt", {"fp32"}, {"nn", "nt"}, false),
     .runtime_m = true,
     .epilogue = true,
     .make = [](const TaskParams& p,
                const std::vector<int64_t>& shape) -> std::unique_ptr<Template> {
       const std::vector<int64_t> s = shape_of_size("gemm", shape, 3, "M,N,K");
       return std::make_unique<GemmTemplate>(s[0], s[1], s[2], gemm_layout(p.layout), p.runtime_m,
                                             parse_epilogue(p.epilogue));
     }}};

}  // namespace

}  // namespace cutune
