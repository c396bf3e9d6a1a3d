#include "kernels/gemm_tc.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

namespace {

constexpr int64_t kMaxSharedBytes = 227 * 1024;

struct TcParams {
  int bm, bn, bk, wm, wn, stages, smem_layout, copy_bytes, raster, split_k, epi_vec;
  bool ldmatrix;
  int warps_m() const { return bm / wm; }
  int warps_n() const { return bn / wn; }
  int threads() const { return 32 * warps_m() * warps_n(); }
  int mi() const { return wm / 16; }  // m16 tiles per warp
  int ni() const { return wn / 8; }   // n8 tiles per warp
};

TcParams params_of(const Config& c) {
  TcParams p{};
  p.bm = int(c.get("block_m"));
  p.bn = int(c.get("block_n"));
  p.bk = int(c.get("block_k"));
  p.wm = int(c.get("warp_m"));
  p.wn = int(c.get("warp_n"));
  p.stages = int(c.get("stages"));
  p.smem_layout = int(c.get("smem_layout"));
  p.copy_bytes = int(c.get("copy_bytes"));
  p.ldmatrix = c.get("ldmatrix") != 0;
  p.raster = int(c.get("raster_group"));
  p.split_k = int(c.get("split_k"));
  p.epi_vec = int(c.get("epilogue_vec"));
  return p;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
Expr i32(int64_t v) { return IntImm::make(Type::i32(), v); }

// A ring of `stages` shared tiles of rows × cols 16-bit elements, cols contiguous.
struct SmemTile {
  Buffer buffer;
  int rows, cols, layout;
  int row_len() const { return layout == 1 ? cols + 8 : cols; }
  int64_t stage_elements() const { return int64_t{rows} * row_len(); }

  // The element offset of (row, col) in stage `stage`.
  Expr offset(const Expr& stage, const Expr& row, const Expr& col) const {
    Expr base = stage * i32(stage_elements()) + row * row_len();
    if (layout != 2) return base + col;
    int chunks = cols / 8;
    int group = std::min(chunks, 8);
    int rep = std::max(1, 8 / chunks);
    Expr chunk = col / 8;
    Expr rotated = chunk / group * group + (chunk % group + row / rep % group) % group;
    return base + rotated * 8 + col % 8;
  }
};

// Copies a rows × cols slice of a row-major global matrix (rows `ld` long) into a SmemTile,
// `elems` elements per copy: cp.async of 2·elems bytes with zero-fill, or (elems == 1) a
// synchronous element copy. (row0, col0) is the slice's first global element.
struct TileCopy {
  std::string prefix;
  Buffer global;
  const SmemTile* tile;
  int elems, threads;
  int64_t ld, row_limit, col_limit;
  bool guard_rows, guard_cols;
  DType dtype;

  int copies() const { return tile->rows * tile->cols / elems; }

  Stmt copy(const Expr& tx, const Expr& stage, const Expr& row0, const Expr& col0) const {
    int per_row = tile->cols / elems;
    std::string var = prefix + "_cp";
    Expr r = int_var(var);
    Expr v = r * threads + tx;
    Expr row = v / per_row, col = v % per_row * elems;
    Expr grow = row0 + row, gcol = col0 + col;
    std::vector<Expr> ok;
    if (guard_rows) ok.push_back(grow < i32(row_limit));
    if (guard_cols) ok.push_back(gcol < i32(col_limit));
    Expr index = grow * i32(ld) + gcol;
    Expr dst = address_of(tile->buffer, tile->offset(stage, row, col));
    Stmt body;
    if (elems > 1) {
      Expr src_index = ok.empty() ? index : select(all_of(ok), index, 0);
      Expr src_bytes = ok.empty() ? i32(2 * elems) : select(all_of(ok), i32(2 * elems), 0);
      body = cp_async(2 * elems, dst, address_of(global, src_index), src_bytes);
    } else {
      Stmt store = Store::make(tile->buffer, tile->offset(stage, row, col), Load::make(global, index));
      body = ok.empty() ? store
                        : IfThenElse::make(all_of(ok), store,
                                           Store::make(tile->buffer, tile->offset(stage, row, col),
                                                       f32_to_storage(dtype, f32(0.0))));
    }
    int per_thread = int(ceil_div(copies(), threads));
    if (copies() % threads != 0) body = IfThenElse::make(v < copies(), body);
    return For::make(var, 0, per_thread, ForKind::unrolled, body);
  }
};

}  // namespace

GemmTcTemplate::GemmTcTemplate(int64_t m, int64_t n, int64_t k, TcLayout layout, DType input,
                               bool out16)
    : m_(m), n_(n), k_(k), layout_(layout), input_(input), out16_(out16) {
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  if (input != DType::Float16 && input != DType::BFloat16) {
    throw TaskError("a tensor-core GEMM takes fp16 or bf16 inputs");
  }
  if (m < 1 || n < 1 || k < 1) {
    throw TaskError(fmt::format("{} needs M, N, K >= 1, got {},{},{}", op(), m, n, k));
  }
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim || m * k >= INT32_MAX || k * n >= INT32_MAX ||
      m * n >= INT32_MAX) {
    throw TaskError(fmt::format("{} {}x{}x{} is too large: each matrix must have fewer than "
                                "2^31 elements",
                                op(), m, n, k));
  }
  define_space();
}

std::string GemmTcTemplate::op() const {
  return input_ == DType::Float16 ? "gemm_fp16" : "gemm_bf16";
}

std::string GemmTcTemplate::name() const {
  return op() + (layout_ == TcLayout::nn ? "_nn" : "_nt") + (out16_ ? "_out16" : "");
}

std::vector<std::string> GemmTcTemplate::template_names(const std::string& op) {
  return {op + "_nn", op + "_nt", op + "_nn_out16", op + "_nt_out16"};
}

void GemmTcTemplate::define_space() {
  space_.define_choice("block_m", {32, 64, 128, 256});
  space_.define_choice("block_n", {32, 64, 128, 256});
  space_.define_choice("block_k", {16, 32, 64});
  space_.define_choice("warp_m", {16, 32, 64});
  space_.define_choice("warp_n", {8, 16, 32, 64});
  space_.define_choice("stages", {2, 3, 4, 5});
  space_.define_choice("smem_layout", {0, 1, 2});  // plain, padded, swizzled
  space_.define_choice("copy_bytes", {2, 4, 8, 16});
  space_.define_bool("ldmatrix");
  space_.define_choice("raster_group", {1, 4, 8});
  space_.define_choice("split_k", {1, 2, 4});
  space_.define_choice("epilogue_vec", {1, 2});

  space_.add_constraint("block tile divisible by the warp tile", [](const Config& c) {
    return c.get("block_m") % c.get("warp_m") == 0 && c.get("block_n") % c.get("warp_n") == 0;
  });
  space_.add_constraint("1 to 16 warps per block", [](const Config& c) {
    int64_t w = (c.get("block_m") / c.get("warp_m")) * (c.get("block_n") / c.get("warp_n"));
    return w >= 1 && w <= 16;
  });
  space_.add_constraint("at most 128 accumulators per thread", [](const Config& c) {
    return (c.get("warp_m") / 16) * (c.get("warp_n") / 8) * 4 <= 128;
  });
  bool nn = layout_ == TcLayout::nn;
  int64_t n = n_, k = k_;
  space_.add_constraint("copies keep global rows aligned", [nn, n, k](const Config& c) {
    int64_t e = c.get("copy_bytes") / 2;
    return k % e == 0 && (!nn || n % e == 0);
  });
  space_.add_constraint("shared memory within the opt-in limit", [nn](const Config& c) {
    int64_t pad = c.get("smem_layout") == 1 ? 8 : 0;
    int64_t bm = c.get("block_m"), bn = c.get("block_n"), bk = c.get("block_k");
    int64_t a = bm * (bk + pad);
    int64_t b = nn ? bk * (bn + pad) : bn * (bk + pad);
    return c.get("stages") * (a + b) * 2 <= kMaxSharedBytes;
  });
  bool out16 = out16_;
  space_.add_constraint("split-K accumulates fp32 C with scalar atomics",
                        [out16](const Config& c) {
                          return c.get("split_k") == 1 || (!out16 && c.get("epilogue_vec") == 1);
                        });
  space_.add_constraint("split-K leaves every split a K slice", [k](const Config& c) {
    return c.get("split_k") <= ceil_div(k, c.get("block_k"));
  });
  space_.add_constraint("paired epilogue stores need an even N", [n](const Config& c) {
    return c.get("epilogue_vec") == 1 || n % 2 == 0;
  });
}

std::vector<Config> GemmTcTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) {
    nlohmann::json j;
    j["knobs"] = std::move(knobs);
    Config c = space_.from_json(j);
    if (space_.is_valid(c)) out.push_back(c);
  };
  // The usual Ampere-style mma.sync kernel: 128x128x32 blocks of 4 warps of 64x64, a
  // 4-stage cp.async ring of swizzled 16-byte chunks, ldmatrix fragments, grouped blocks.
  add({{"block_m", 128}, {"block_n", 128}, {"block_k", 32}, {"warp_m", 64}, {"warp_n", 64},
       {"stages", 4}, {"smem_layout", 2}, {"copy_bytes", 16}, {"ldmatrix", 1},
       {"raster_group", 8}, {"split_k", 1}, {"epilogue_vec", 2}});
  // Smaller tiles for small or skinny problems.
  add({{"block_m", 64}, {"block_n", 64}, {"block_k", 32}, {"warp_m", 32}, {"warp_n", 32},
       {"stages", 3}, {"smem_layout", 2}, {"copy_bytes", 16}, {"ldmatrix", 1},
       {"raster_group", 4}, {"split_k", 1}, {"epilogue_vec", 2}});
  return out;
}

std::vector<std::string> GemmTcTemplate::loop_names() const {
  return {"bx", "kz", "tx", "k_outer", "kk", "a_cp", "b_cp", "i", "j", "jp", "r", "h", "e"};
}

std::vector<std::string> GemmTcTemplate::buffer_names() const {
  return {"A", "B", "C", "A_shared", "B_shared", "C_frag", "A_frag", "B_frag"};
}

std::vector<TensorSpec> GemmTcTemplate::tensors() const {
  Type in{input_, 1};
  TensorSpec c{"C", out16_ ? in : Type::f32(), m_ * n_, true};
  c.zero_init = !out16_;  // split-K configurations add into it
  return {c, {"A", in, m_ * k_, false}, {"B", in, k_ * n_, false}};
}

void GemmTcTemplate::reference(std::vector<std::vector<float>>& t) const {
  std::vector<float>& c = t[0];
  const std::vector<float>& a = t[1];
  const std::vector<float>& b = t[2];
  std::vector<double> row(n_);
  for (int64_t i = 0; i < m_; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int64_t kk = 0; kk < k_; ++kk) {
      double av = a[i * k_ + kk];
      if (layout_ == TcLayout::nn) {
        const float* brow = &b[kk * n_];
        for (int64_t j = 0; j < n_; ++j) row[j] += av * brow[j];
      } else {
        for (int64_t j = 0; j < n_; ++j) row[j] += av * b[j * k_ + kk];
      }
    }
    for (int64_t j = 0; j < n_; ++j) c[i * n_ + j] = float(row[j]);
  }
}

Kernel GemmTcTemplate::build(const Config& config) const {
  const TcParams p = params_of(config);
  const bool nn = layout_ == TcLayout::nn;
  const int threads = p.threads();
  const int mi = p.mi(), ni = p.ni();
  const int elems = p.copy_bytes / 2;
  const bool async = elems > 1;
  const int64_t tiles_m = ceil_div(m_, p.bm), tiles_n = ceil_div(n_, p.bn);
  const int64_t k_tiles = ceil_div(k_, p.bk);
  const int64_t tiles_per_split = ceil_div(k_tiles, p.split_k);
  const Type in{input_, 1};
  const Type out = out16_ ? in : Type::f32();

  Buffer a = Buffer::make("A", in, MemoryScope::global, m_ * k_, true);
  Buffer b = Buffer::make("B", in, MemoryScope::global, k_ * n_, true);
  Buffer c = Buffer::make("C", out, MemoryScope::global, m_ * n_);
  SmemTile a_tile{Buffer(), p.bm, p.bk, p.smem_layout};
  SmemTile b_tile = nn ? SmemTile{Buffer(), p.bk, p.bn, p.smem_layout}
                       : SmemTile{Buffer(), p.bn, p.bk, p.smem_layout};
  a_tile.buffer = Buffer::make("A_shared", in, MemoryScope::shared,
                               p.stages * a_tile.stage_elements());
  b_tile.buffer = Buffer::make("B_shared", in, MemoryScope::shared,
                               p.stages * b_tile.stage_elements());
  Buffer acc = Buffer::make("C_frag", Type::f32(), MemoryScope::local, int64_t{mi} * ni * 4);
  Buffer a_frag = Buffer::make("A_frag", Type::u32(), MemoryScope::local, int64_t{mi} * 4);
  Buffer b_frag = Buffer::make("B_frag", Type::u32(), MemoryScope::local, int64_t{ni} * 2);

  Expr tx = int_var("tx"), lane = int_var("lane"), g = int_var("group"),
       tig = int_var("thread_in_group");
  Expr warp_row = int_var("warp_row"), warp_col = int_var("warp_col");
  Expr tile_m = int_var("tile_m"), tile_n = int_var("tile_n");
  Expr kz = int_var("kz"), first_tile = int_var("first_k_tile"), n_tiles = int_var("k_tiles");

  bool k_tail = k_ % p.bk != 0;
  TileCopy a_copy{"a", a, &a_tile, elems, threads, k_, m_, k_, m_ % p.bm != 0, k_tail, input_};
  TileCopy b_copy = nn ? TileCopy{"b", b, &b_tile, elems, threads, n_, k_, n_, k_tail,
                                  n_ % p.bn != 0, input_}
                       : TileCopy{"b", b, &b_tile, elems, threads, k_, n_, k_, n_ % p.bn != 0,
                                  k_tail, input_};

  // Issues the copies of global K slice `k_tile` into ring slot `stage`.
  auto load_slice = [&](const Expr& k_tile, const Expr& stage) {
    Expr k0 = k_tile * p.bk;
    Stmt la = a_copy.copy(tx, stage, tile_m * p.bm, k0);
    Stmt lb = nn ? b_copy.copy(tx, stage, k0, tile_n * p.bn)
                 : b_copy.copy(tx, stage, tile_n * p.bn, k0);
    return Block::make({la, lb});
  };
  auto commit = [&]() { return async ? cp_async_commit() : Stmt(); };

  // One block_k slice of the warp's products from ring slot `stage`.
  auto compute = [&](const Expr& stage) {
    Expr kk = int_var("kk"), i = int_var("i"), j = int_var("j"), jp = int_var("jp"),
         r = int_var("r");
    Expr wrow0 = warp_row * p.wm, wcol0 = warp_col * p.wn, k16 = kk * 16;
    Stmt load_a, load_b;
    // B element (k, n) of the slice, wherever the layout keeps it.
    auto b_at = [&](const Expr& kx, const Expr& nx) {
      return nn ? Load::make(b_tile.buffer, b_tile.offset(stage, kx, nx))
                : Load::make(b_tile.buffer, b_tile.offset(stage, nx, kx));
    };
    if (p.ldmatrix) {
      // Matrix q = lane/8 of the x4: rows (q%2)*8.., k (q/2)*8.. (PTX a0..a3 order).
      load_a = For::make(
          "i", 0, mi, ForKind::unrolled,
          ldmatrix(4, false, address_of(a_frag, i * 4),
                   address_of(a_tile.buffer,
                              a_tile.offset(stage, wrow0 + i * 16 + lane % 16, k16 + lane / 16 * 8))));
      // An x4 covers two n8 tiles: matrices (n0, k0), (n0, k8), (n8, k0), (n8, k8), i.e.
      // b0, b1 of tile 2jp, then of tile 2jp+1. An odd last tile takes an x2.
      auto b_address = [&](const Expr& n_base, const Expr& n_half) {
        Expr kx = k16 + lane / 8 % 2 * 8;
        if (nn) {
          return address_of(b_tile.buffer,
                            b_tile.offset(stage, kx + lane % 8, n_base + n_half * 8));
        }
        return address_of(b_tile.buffer, b_tile.offset(stage, n_base + n_half * 8 + lane % 8, kx));
      };
      std::vector<Stmt> bs;
      if (ni >= 2) {
        bs.push_back(For::make("jp", 0, ni / 2, ForKind::unrolled,
                               ldmatrix(4, nn, address_of(b_frag, jp * 4),
                                        b_address(wcol0 + jp * 16, lane / 16))));
      }
      if (ni % 2) {
        bs.push_back(ldmatrix(2, nn, address_of(b_frag, (ni - 1) * 2),
                              b_address(wcol0 + (ni - 1) * 8, 0)));
      }
      load_b = Block::make(bs);
    } else {
      // a_r holds rows group + (r%2)*8, k 2*tig + (r/2)*8 and the next k.
      Expr row = wrow0 + i * 16 + g + r % 2 * 8;
      Expr col = k16 + tig * 2 + r / 2 * 8;
      load_a = For::make(
          "i", 0, mi, ForKind::unrolled,
          For::make("r", 0, 4, ForKind::unrolled,
                    Store::make(a_frag, i * 4 + r,
                                pack_b16x2(Load::make(a_tile.buffer, a_tile.offset(stage, row, col)),
                                           Load::make(a_tile.buffer,
                                                      a_tile.offset(stage, row, col + 1))))));
      // b_r holds k 2*tig + r*8 and the next k, column group.
      Expr kx = k16 + tig * 2 + r * 8;
      Expr nx = wcol0 + j * 8 + g;
      load_b = For::make("j", 0, ni, ForKind::unrolled,
                         For::make("r", 0, 2, ForKind::unrolled,
                                   Store::make(b_frag, j * 2 + r,
                                               pack_b16x2(b_at(kx, nx), b_at(kx + 1, nx)))));
    }
    Expr slot = (i * ni + j) * 4;
    Stmt mma = For::make(
        "i", 0, mi, ForKind::unrolled,
        For::make("j", 0, ni, ForKind::unrolled,
                  mma_m16n8k16(input_, address_of(acc, slot), address_of(a_frag, i * 4),
                               address_of(b_frag, j * 2), address_of(acc, slot))));
    return For::make("kk", 0, p.bk / 16, ForKind::unrolled, Block::make({load_a, load_b, mma}));
  };

  // The cp.async ring: slices 0..stages-2 in flight before the loop; each iteration waits for
  // its slice, refills the slot the previous iteration read, and computes.
  const int s = p.stages;
  std::vector<Stmt> prologue;
  for (int st = 0; st < s - 1; ++st) {
    prologue.push_back(IfThenElse::make(i32(st) < n_tiles, load_slice(first_tile + st, st)));
    prologue.push_back(commit());
  }
  Expr ko = int_var("k_outer");
  Expr next = ko + (s - 1);
  Stmt loop = For::make(
      "k_outer", 0, n_tiles, ForKind::serial,
      Block::make({async ? cp_async_wait(s - 2) : Stmt(), Sync::make(),
                   IfThenElse::make(next < n_tiles, load_slice(first_tile + next, next % s)),
                   commit(), compute(ko % s)}));
  Stmt main_loop = Block::make({Block::make(prologue), loop});

  Expr z = int_var("i");
  Stmt init = For::make("i", 0, mi * ni * 4, ForKind::unrolled, Store::make(acc, z, f32(0.0)));

  // Epilogue: lane holds rows group, group+8 (h) and columns 2*tig, 2*tig+1 (e) of each tile.
  Expr i = int_var("i"), j = int_var("j"), h = int_var("h"), e = int_var("e");
  Expr grow = tile_m * p.bm + warp_row * p.wm + i * 16 + g + h * 8;
  Expr gcol = tile_n * p.bn + warp_col * p.wn + j * 8 + tig * 2;
  Expr base = (i * ni + j) * 4 + h * 2;
  Stmt write;
  if (p.epi_vec == 2) {
    Expr value = out16_ ? pack_x2(input_, Load::make(acc, base), Load::make(acc, base + 1))
                        : Load::make(acc, base, 2);
    write = IfThenElse::make(grow < i32(m_) && gcol < i32(n_),
                             Store::make(c, grow * i32(n_) + gcol, value));
  } else {
    Expr index = grow * i32(n_) + gcol + e;
    Expr v = Load::make(acc, base + e);
    Stmt store = p.split_k > 1 ? atomic_add(c, index, v)
                               : Store::make(c, index, out16_ ? f32_to_storage(input_, v) : v);
    write = For::make("e", 0, 2, ForKind::unrolled,
                      IfThenElse::make(grow < i32(m_) && gcol + e < i32(n_), store));
  }
  Stmt epilogue = For::make(
      "i", 0, mi, ForKind::unrolled,
      For::make("j", 0, ni, ForKind::unrolled, For::make("h", 0, 2, ForKind::unrolled, write)));

  Stmt body = Block::make({init, main_loop, epilogue});
  body = Allocate::make(b_frag, body);
  body = Allocate::make(a_frag, body);
  body = Allocate::make(acc, body);
  body = Allocate::make(b_tile.buffer, body);
  body = Allocate::make(a_tile.buffer, body);
  Expr warp = tx / 32;
  body = LetStmt::make("warp_col", warp % p.warps_n(), body);
  body = LetStmt::make("warp_row", warp / p.warps_n(), body);
  body = LetStmt::make("thread_in_group", lane % 4, body);
  body = LetStmt::make("group", lane / 4, body);
  body = LetStmt::make("lane", tx % 32, body);
  // This block's K slices: split kz takes tiles_per_split of them (the last split fewer).
  if (p.split_k > 1) {
    body = LetStmt::make("k_tiles",
                         max(min(i32(tiles_per_split), i32(k_tiles) - first_tile), 0), body);
    body = LetStmt::make("first_k_tile", kz * i32(tiles_per_split), body);
  } else {
    body = LetStmt::make("k_tiles", i32(k_tiles), body);
    body = LetStmt::make("first_k_tile", 0, body);
  }
  // Grouped rasterisation: raster_group rows of tiles at a time, column-major inside a group.
  Expr bx = int_var("bx");
  if (p.raster == 1) {
    body = LetStmt::make("tile_n", bx % i32(tiles_n), body);
    body = LetStmt::make("tile_m", bx / i32(tiles_n), body);
  } else {
    int64_t group_tiles = p.raster * tiles_n;
    Expr first_m = bx / i32(group_tiles) * p.raster;
    Expr rows = int_var("group_rows");
    body = LetStmt::make("tile_n", bx % i32(group_tiles) / rows, body);
    body = LetStmt::make("tile_m", first_m + bx % i32(group_tiles) % rows, body);
    body = LetStmt::make("group_rows", min(i32(tiles_m) - first_m, i32(p.raster)), body);
  }
  body = For::make("tx", 0, threads, ForKind::thread_x, body);
  if (p.split_k > 1) body = For::make("kz", 0, p.split_k, ForKind::block_y, body);
  body = For::make("bx", 0, i32(tiles_m * tiles_n), ForKind::block_x, body);

  Kernel kernel;
  kernel.name = name();
  kernel.buffers = {c, a, b};
  kernel.body = body;
  return kernel;
}

}  // namespace cutune
