#include "kernels/tc_blocks.h"

#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"
#include "src/ir/tma_intrinsics.h"

namespace cutune::tc {

using namespace ir;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

TcParams tc_params(const Config& c) {
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
  p.min_blocks = int(c.get("min_blocks"));
  return p;
}

void define_tc_knobs(ConfigSpace& space) {
  space.define_choice("block_m", {32, 64, 128, 256});
  space.define_choice("block_n", {32, 64, 128, 256});
  space.define_choice("block_k", {16, 32, 64});
  space.define_choice("warp_m", {16, 32, 64});
  space.define_choice("warp_n", {8, 16, 32, 64});
  space.define_choice("stages", {2, 3, 4, 5});
  space.define_choice("smem_layout", {0, 1, 2});  // plain, padded, swizzled
  space.define_choice("copy_bytes", {2, 4, 8, 16});
  space.define_bool("ldmatrix");
  space.define_choice("raster_group", {1, 4, 8});
  space.define_choice("split_k", {1, 2, 4});
  space.define_choice("epilogue_vec", {1, 2});
  // Last, so that the indices of configurations from before it are unchanged (min_blocks 1).
  space.define_choice("min_blocks", {1, 2}, 1);

  space.add_constraint("block tile divisible by the warp tile", [](const Config& c) {
    return c.get("block_m") % c.get("warp_m") == 0 && c.get("block_n") % c.get("warp_n") == 0;
  });
  space.add_constraint("1 to 16 warps per block", [](const Config& c) {
    int64_t w = (c.get("block_m") / c.get("warp_m")) * (c.get("block_n") / c.get("warp_n"));
    return w >= 1 && w <= 16;
  });
  space.add_constraint("at most 128 accumulators per thread", [](const Config& c) {
    return (c.get("warp_m") / 16) * (c.get("warp_n") / 8) * 4 <= 128;
  });
  // ptxas caps registers at 64K / (min_blocks · threads); below the accumulators, the
  // double-buffered fragments and ~32 for addresses and indices, the kernel spills. (At
  // min_blocks 1 the template's space is left as it was.)
  space.add_constraint(
      "min_blocks leave registers for accumulators and fragments", [](const Config& c) {
        if (c.get("min_blocks") == 1) return true;
        int64_t mi = c.get("warp_m") / 16, ni = c.get("warp_n") / 8;
        int64_t warps = (c.get("block_m") / c.get("warp_m")) * (c.get("block_n") / c.get("warp_n"));
        int64_t cap = std::min<int64_t>(255, 65536 / (c.get("min_blocks") * 32 * warps) / 8 * 8);
        return mi * ni * 4 + 2 * (mi * 4 + ni * 2) + 32 <= cap;
      });
}

void add_tc_shape_constraints(ConfigSpace& space, bool b_k_major, int64_t n, int64_t k,
                              bool out16) {
  space.add_constraint("shared memory within the opt-in limit", [b_k_major](const Config& c) {
    int64_t pad = c.get("smem_layout") == 1 ? 8 : 0;
    int64_t bm = c.get("block_m"), bn = c.get("block_n"), bk = c.get("block_k");
    int64_t a = bm * (bk + pad);
    int64_t b = b_k_major ? bk * (bn + pad) : bn * (bk + pad);
    return c.get("min_blocks") * c.get("stages") * (a + b) * 2 <= kMaxSharedBytes;
  });
  space.add_constraint("split-K accumulates fp32 C with scalar atomics", [out16](const Config& c) {
    return c.get("split_k") == 1 || (!out16 && c.get("epilogue_vec") == 1);
  });
  space.add_constraint("split-K leaves every split a K slice", [k](const Config& c) {
    return c.get("split_k") <= ceil_div(k, c.get("block_k"));
  });
  space.add_constraint("paired epilogue stores need an even N",
                       [n](const Config& c) { return c.get("epilogue_vec") == 1 || n % 2 == 0; });
}

Expr SmemTile::offset(const Expr& stage, const Expr& row, const Expr& col) const {
  Expr base = stage * i32(stage_elements()) + row * row_len();
  if (layout != 2) return base + col;
  int chunks = cols / 8;
  int group = std::min(chunks, 8);
  int rep = std::max(1, 8 / chunks);
  Expr chunk = col / 8;
  Expr rotated = chunk / group * group + (chunk % group + row / rep % group) % group;
  return base + rotated * 8 + col % 8;
}

SourceFn matrix_source(int64_t ld, int64_t row_limit, int64_t col_limit, bool guard_rows,
                       bool guard_cols) {
  return [=](const Expr& row0, const Expr& col0, const Expr& row, const Expr& col) {
    Expr grow = row0 + row, gcol = col0 + col;
    CopySource s;
    if (guard_rows) s.in_range.push_back(grow < i32(row_limit));
    if (guard_cols) s.in_range.push_back(gcol < i32(col_limit));
    s.index = grow * i32(ld) + gcol;
    return s;
  };
}

Stmt TileCopy::copy(const Expr& tx, const Expr& stage, const Expr& row0, const Expr& col0) const {
  // A configuration outside the space's constraints (a warp tile larger than the block's) may
  // leave no thread to copy with: refused like any IR it cannot build, never a division by zero.
  if (threads <= 0 || elems <= 0)
    throw ir::IRError(fmt::format("the {} tile copy has {} threads and {}-element copies", prefix,
                                  threads, elems));
  int per_row = tile->cols / elems;
  std::string var = prefix + "_cp";
  Expr r = int_var(var);
  Expr v = r * threads + tx;
  Expr row = v / per_row, col = v % per_row * elems;
  CopySource src = source(row0, col0, row, col);
  const std::vector<Expr>& ok = src.in_range;
  Expr dst = address_of(tile->buffer, tile->offset(stage, row, col));
  Stmt body;
  if (elems > 1) {
    Expr src_index = ok.empty() ? src.index : select(all_of(ok), src.index, 0);
    Expr src_bytes = ok.empty() ? i32(2 * elems) : select(all_of(ok), i32(2 * elems), 0);
    body = cp_async(2 * elems, dst, address_of(global, src_index), src_bytes);
  } else {
    Stmt store =
        Store::make(tile->buffer, tile->offset(stage, row, col), Load::make(global, src.index));
    body = ok.empty() ? store
                      : IfThenElse::make(all_of(ok), store,
                                         Store::make(tile->buffer, tile->offset(stage, row, col),
                                                     f32_to_storage(dtype, f32(0.0))));
  }
  int per_thread = int(ceil_div(copies(), threads));
  if (copies() % threads != 0) body = IfThenElse::make(v < copies(), body);
  return For::make(var, 0, per_thread, ForKind::unrolled, body);
}

std::vector<std::string> tc_loop_names() {
  return {"bx", "kz", "tx", "k_outer", "kk", "a_cp", "b_cp", "i", "j", "jp", "r", "h", "e"};
}

nlohmann::json ring_knobs(int block_m, int block_n, int warp_m, int warp_n, int stages,
                          int raster_group) {
  return {{"block_m", block_m}, {"block_n", block_n},
          {"block_k", 32},      {"warp_m", warp_m},
          {"warp_n", warp_n},   {"stages", stages},
          {"smem_layout", 2},   {"copy_bytes", 16},
          {"ldmatrix", 1},      {"raster_group", raster_group},
          {"split_k", 1},       {"epilogue_vec", 2}};
}

std::vector<std::string> tc_local_buffer_names() {
  return {"A_shared", "B_shared", "C_frag", "A_frag", "B_frag", "stage_ring"};
}

Stmt bind_tile_grid(Stmt body, const TileGrid& g) {
  const int64_t tiles_per_split = ceil_div(g.k_tiles, g.split_k);
  if (g.split_k > 1) {
    Expr first_tile = int_var("first_k_tile");
    body = LetStmt::make(
        "k_tiles", max(min(i32(tiles_per_split), i32(g.k_tiles) - first_tile), 0), body);
    body = LetStmt::make("first_k_tile", int_var("kz") * i32(tiles_per_split), body);
  } else if (!g.k_per_tile) {
    body = LetStmt::make("k_tiles", i32(g.k_tiles), body);
    body = LetStmt::make("first_k_tile", 0, body);
  }
  Expr bx = int_var("bx");
  if (g.tiles_per_block == 1 && !g.persistent) {
    body = bind_tile(body, g, g.cluster_size() > 1 ? bx / g.cluster_size() : bx);
  }
  // The block's rank in its cluster, which its tiles follow (bind_tile).
  if (g.cluster_size() > 1) body = LetStmt::make("cta_rank", cluster_ctarank(), body);
  body = For::make("tx", 0, g.threads, ForKind::thread_x, body);
  if (g.split_k > 1) body = For::make("kz", 0, g.split_k, ForKind::block_y, body);
  return For::make("bx", 0, i32(g.blocks()), ForKind::block_x, body);
}

namespace {

// `body` under `m` and `n` of tile `tile` of a tiles_m x tiles_n grid in its rasterisation.
Stmt bind_raster(Stmt body, const TileGrid& g, const Expr& tile, const std::string& m,
                 const std::string& n) {
  if (g.raster == 1) {
    body = LetStmt::make(n, tile % i32(g.tiles_n), body);
    return LetStmt::make(m, tile / i32(g.tiles_n), body);
  }
  const int64_t group_tiles = g.raster * g.tiles_n;
  Expr first_m = tile / i32(group_tiles) * g.raster;
  Expr rows = int_var("group_rows");
  body = LetStmt::make(n, tile % i32(group_tiles) / rows, body);
  body = LetStmt::make(m, first_m + tile % i32(group_tiles) % rows, body);
  // A run-time M's tile rows as the kernel computes them (no clusters go with one).
  const Expr tiles_m = g.run_tiles_m.defined() ? g.run_tiles_m : i32(g.tiles_m);
  return LetStmt::make("group_rows", min(tiles_m - first_m, i32(g.raster)), body);
}

}  // namespace

Stmt bind_tile(Stmt body, const TileGrid& g, const Expr& tile) {
  if (g.cluster_size() == 1) return bind_raster(body, g, tile, "tile_m", "tile_n");
  // The block's tile in its cluster tile: row (or column) cta_rank of the group.
  Expr rank = int_var("cta_rank");
  body = LetStmt::make(
      "tile_n", int_var("cluster_tile_n") * g.cluster_n + (g.cluster_n > 1 ? rank : i32(0)), body);
  body = LetStmt::make(
      "tile_m", int_var("cluster_tile_m") * g.cluster_m + (g.cluster_m > 1 ? rank : i32(0)), body);
  TileGrid clusters = g;
  clusters.tiles_m = ceil_div(g.tiles_m, int64_t{g.cluster_m});
  clusters.tiles_n = ceil_div(g.tiles_n, int64_t{g.cluster_n});
  clusters.cluster_m = clusters.cluster_n = 1;
  return bind_raster(body, clusters, tile, "cluster_tile_m", "cluster_tile_n");
}

}  // namespace cutune::tc
