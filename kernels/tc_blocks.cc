#include "kernels/tc_blocks.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"

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

Kernel build_tc_gemm(const TcGemmSpec& spec, const TcParams& p) {
  const bool nn = spec.b_k_major;
  const DType input = spec.input;
  const int64_t m = spec.m, n = spec.n, k = spec.k;
  const int threads = p.threads();
  const int mi = p.mi(), ni = p.ni();
  const bool async = spec.a.elems > 1 || spec.b.elems > 1;
  const int64_t tiles_m = ceil_div(m, p.bm), tiles_n = ceil_div(n, p.bn);
  const int64_t k_tiles = ceil_div(k, p.bk);
  const Type in{input, 1};
  const Buffer& c = spec.c;

  SmemTile a_tile{Buffer(), p.bm, p.bk, p.smem_layout};
  SmemTile b_tile = nn ? SmemTile{Buffer(), p.bk, p.bn, p.smem_layout}
                       : SmemTile{Buffer(), p.bn, p.bk, p.smem_layout};
  a_tile.buffer =
      Buffer::make("A_shared", in, MemoryScope::shared, p.stages * a_tile.stage_elements());
  b_tile.buffer =
      Buffer::make("B_shared", in, MemoryScope::shared, p.stages * b_tile.stage_elements());
  Buffer acc = Buffer::make("C_frag", Type::f32(), MemoryScope::local, int64_t{mi} * ni * 4);
  Buffer a_frag = Buffer::make("A_frag", Type::u32(), MemoryScope::local, int64_t{mi} * 4 * 2);
  Buffer b_frag = Buffer::make("B_frag", Type::u32(), MemoryScope::local, int64_t{ni} * 2 * 2);
  Buffer ring = Buffer::make("stage_ring", Type::i32(), MemoryScope::local, 2);

  Expr tx = int_var("tx"), lane = int_var("lane"), g = int_var("group"),
       tig = int_var("thread_in_group");
  Expr warp_row = int_var("warp_row"), warp_col = int_var("warp_col");
  Expr tile_m = int_var("tile_m"), tile_n = int_var("tile_n");
  Expr first_tile = int_var("first_k_tile"), n_tiles = int_var("k_tiles");

  TileCopy a_copy{"a", spec.a.global, &a_tile, spec.a.elems, threads, spec.a.source, input};
  TileCopy b_copy{"b", spec.b.global, &b_tile, spec.b.elems, threads, spec.b.source, input};

  // Issues the copies of global K slice `k_tile` into ring slot `stage`.
  auto load_slice = [&](const Expr& k_tile, const Expr& stage) {
    Expr k0 = k_tile * p.bk;
    Stmt la = a_copy.copy(tx, stage, tile_m * p.bm, k0);
    Stmt lb =
        nn ? b_copy.copy(tx, stage, k0, tile_n * p.bn) : b_copy.copy(tx, stage, tile_n * p.bn, k0);
    return Block::make({la, lb});
  };
  auto commit = [&]() { return async ? cp_async_commit() : Stmt(); };

  // The fragments of k16 step `k16` (a multiple of 16) of ring slot `stage` into fragment
  // buffer `buf` (0 or 1: the fragments are double-buffered so that the loads of step k+1
  // are in flight while step k multiplies).
  const int a_frag_len = mi * 4, b_frag_len = ni * 2;
  auto load_fragments = [&](const Expr& stage, const Expr& k16, int buf) {
    Expr i = int_var("i"), j = int_var("j"), jp = int_var("jp"), r = int_var("r");
    Expr wrow0 = warp_row * p.wm, wcol0 = warp_col * p.wn;
    const int a0 = buf * a_frag_len, b0 = buf * b_frag_len;
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
          ldmatrix(4, false, address_of(a_frag, a0 + i * 4),
                   address_of(a_tile.buffer, a_tile.offset(stage, wrow0 + i * 16 + lane % 16,
                                                           k16 + lane / 16 * 8))));
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
                               ldmatrix(4, nn, address_of(b_frag, b0 + jp * 4),
                                        b_address(wcol0 + jp * 16, lane / 16))));
      }
      if (ni % 2) {
        bs.push_back(ldmatrix(2, nn, address_of(b_frag, b0 + (ni - 1) * 2),
                              b_address(wcol0 + (ni - 1) * 8, 0)));
      }
      load_b = Block::make(bs);
    } else {
      // a_r holds rows group + (r%2)*8, k 2*tig + (r/2)*8 and the next k.
      Expr row = wrow0 + i * 16 + g + r % 2 * 8;
      Expr col = k16 + tig * 2 + r / 2 * 8;
      load_a = For::make(
          "i", 0, mi, ForKind::unrolled,
          For::make(
              "r", 0, 4, ForKind::unrolled,
              Store::make(
                  a_frag, a0 + i * 4 + r,
                  pack_b16x2(Load::make(a_tile.buffer, a_tile.offset(stage, row, col)),
                             Load::make(a_tile.buffer, a_tile.offset(stage, row, col + 1))))));
      // b_r holds k 2*tig + r*8 and the next k, column group.
      Expr kx = k16 + tig * 2 + r * 8;
      Expr nx = wcol0 + j * 8 + g;
      load_b = For::make("j", 0, ni, ForKind::unrolled,
                         For::make("r", 0, 2, ForKind::unrolled,
                                   Store::make(b_frag, b0 + j * 2 + r,
                                               pack_b16x2(b_at(kx, nx), b_at(kx + 1, nx)))));
    }
    return Block::make({load_a, load_b});
  };
  // The warp's products of the fragments in buffer `buf`.
  auto multiply = [&](int buf) {
    Expr i = int_var("i"), j = int_var("j");
    Expr slot = (i * ni + j) * 4;
    return For::make(
        "i", 0, mi, ForKind::unrolled,
        For::make(
            "j", 0, ni, ForKind::unrolled,
            mma_m16n8k16(input, address_of(acc, slot), address_of(a_frag, buf * a_frag_len + i * 4),
                         address_of(b_frag, buf * b_frag_len + j * 2), address_of(acc, slot))));
  };

  // The cp.async ring, software-pipelined at two levels. Slices 0..stages-2 are in flight
  // before the loop. Iteration k_outer refills the slot iteration k_outer-1 read, multiplies
  // the k16 steps of its slice with each step's fragments loaded one step ahead, and, after
  // the last step's mma are issued, waits for slice k_outer+1, synchronises and loads that
  // slice's first fragments: the tensor cores work across the barrier. Every read of a slot
  // comes before the barrier of the iteration that reads it, and its refill after that
  // barrier. The ring positions are running indices (`stage_ring`: read slot, write slot),
  // advanced by a compare instead of a modulo.
  const int s = p.stages;
  const int steps = p.bk / 16;
  Expr read_stage = Load::make(ring, 0), write_stage = Load::make(ring, 1);
  auto wait_and_sync = [&]() {
    return Block::make({async ? cp_async_wait(s - 2) : Stmt(), Sync::make()});
  };
  auto advance = [&](int slot) {
    Expr v = Load::make(ring, slot);
    return Store::make(ring, slot, select(eq(v, i32(s - 1)), i32(0), v + 1));
  };
  std::vector<Stmt> prologue;
  for (int st = 0; st < s - 1; ++st) {
    prologue.push_back(IfThenElse::make(i32(st) < n_tiles, load_slice(first_tile + st, st)));
    prologue.push_back(commit());
  }
  prologue.push_back(Store::make(ring, 0, i32(0)));
  prologue.push_back(Store::make(ring, 1, i32(s - 1)));
  prologue.push_back(wait_and_sync());
  prologue.push_back(IfThenElse::make(i32(0) < n_tiles, load_fragments(i32(0), i32(0), 0)));

  Expr ko = int_var("k_outer");
  Expr next = ko + (s - 1);
  std::vector<Stmt> iteration = {
      IfThenElse::make(next < n_tiles, load_slice(first_tile + next, write_stage)), commit()};
  if (steps > 1) {
    // Steps 0..steps-2 as a loop of pairs: step kk loads step kk+1 into the other buffer.
    Expr kk = int_var("kk");
    std::vector<Stmt> pair;
    for (int half = 0; half < 2 && half < steps - 1; ++half) {
      Expr step = kk * 2 + half;
      Stmt body =
          Block::make({load_fragments(read_stage, (step + 1) * 16, 1 - half), multiply(half)});
      // An odd count of steps before the last leaves the second half of the last pair out.
      if (half == 1 && (steps - 1) % 2 != 0) body = IfThenElse::make(step < steps - 1, body);
      pair.push_back(body);
    }
    iteration.push_back(For::make("kk", 0, steps / 2, ForKind::unrolled, Block::make(pair)));
  }
  iteration.push_back(multiply((steps - 1) % 2));
  iteration.push_back(wait_and_sync());
  iteration.push_back(advance(0));
  iteration.push_back(advance(1));
  iteration.push_back(IfThenElse::make(ko + 1 < n_tiles, load_fragments(read_stage, i32(0), 0)));
  Stmt loop = For::make("k_outer", 0, n_tiles, ForKind::serial, Block::make(iteration));
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
    Expr value = spec.out16 ? pack_x2(input, Load::make(acc, base), Load::make(acc, base + 1))
                            : Load::make(acc, base, 2);
    write = IfThenElse::make(grow < i32(m) && gcol < i32(n),
                             Store::make(c, grow * i32(n) + gcol, value));
  } else {
    Expr index = grow * i32(n) + gcol + e;
    Expr v = Load::make(acc, base + e);
    Stmt store = p.split_k > 1 ? atomic_add(c, index, v)
                               : Store::make(c, index, spec.out16 ? f32_to_storage(input, v) : v);
    write = For::make("e", 0, 2, ForKind::unrolled,
                      IfThenElse::make(grow < i32(m) && gcol + e < i32(n), store));
  }
  Stmt epilogue = For::make(
      "i", 0, mi, ForKind::unrolled,
      For::make("j", 0, ni, ForKind::unrolled, For::make("h", 0, 2, ForKind::unrolled, write)));

  Stmt body = Block::make({init, main_loop, epilogue});
  body = Allocate::make(ring, body);
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
  body = bind_tile_grid(body, {tiles_m, tiles_n, k_tiles, p.split_k, p.raster, threads});

  Kernel kernel;
  kernel.name = spec.name;
  kernel.buffers = spec.parameters;
  kernel.body = body;
  kernel.min_blocks = p.min_blocks > 1 ? p.min_blocks : 0;  // 1: no promise, as before the knob
  return kernel;
}

Stmt bind_tile_grid(Stmt body, const TileGrid& g) {
  const int64_t tiles_per_split = ceil_div(g.k_tiles, g.split_k);
  if (g.split_k > 1) {
    Expr first_tile = int_var("first_k_tile");
    body = LetStmt::make(
        "k_tiles", max(min(i32(tiles_per_split), i32(g.k_tiles) - first_tile), 0), body);
    body = LetStmt::make("first_k_tile", int_var("kz") * i32(tiles_per_split), body);
  } else {
    body = LetStmt::make("k_tiles", i32(g.k_tiles), body);
    body = LetStmt::make("first_k_tile", 0, body);
  }
  Expr bx = int_var("bx");
  if (g.tiles_per_block == 1) body = bind_tile(body, g, bx);
  body = For::make("tx", 0, g.threads, ForKind::thread_x, body);
  if (g.split_k > 1) body = For::make("kz", 0, g.split_k, ForKind::block_y, body);
  return For::make("bx", 0, i32(g.blocks()), ForKind::block_x, body);
}

Stmt bind_tile(Stmt body, const TileGrid& g, const Expr& tile) {
  if (g.raster == 1) {
    body = LetStmt::make("tile_n", tile % i32(g.tiles_n), body);
    return LetStmt::make("tile_m", tile / i32(g.tiles_n), body);
  }
  const int64_t group_tiles = g.raster * g.tiles_n;
  Expr first_m = tile / i32(group_tiles) * g.raster;
  Expr rows = int_var("group_rows");
  body = LetStmt::make("tile_n", tile % i32(group_tiles) / rows, body);
  body = LetStmt::make("tile_m", first_m + tile % i32(group_tiles) % rows, body);
  return LetStmt::make("group_rows", min(i32(g.tiles_m) - first_m, i32(g.raster)), body);
}

}  // namespace cutune::tc
