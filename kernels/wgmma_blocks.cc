#include "kernels/wgmma_blocks.h"

#include <nlohmann/json.hpp>

#include "kernels/schedule_helpers.h"
#include "src/ir/hopper_intrinsics.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"
#include "src/ir/tma_intrinsics.h"

namespace cutune::wg {

using namespace ir;

namespace {

WgmmaSwizzle swizzle_code(int bytes) {
  switch (bytes) {
    case 128:
      return WgmmaSwizzle::b128;
    case 64:
      return WgmmaSwizzle::b64;
    case 32:
      return WgmmaSwizzle::b32;
    default:
      return WgmmaSwizzle::none;
  }
}

// a XOR b for values below 2^bits, in the IR's arithmetic (it has no bit operations).
Expr xor_bits(const Expr& a, const Expr& b, int bits) {
  Expr out = i32(0);
  for (int i = 0; i < bits; ++i) {
    const int64_t bit = int64_t{1} << i;
    out = out + (a / i32(bit) + b / i32(bit)) % 2 * i32(bit);
  }
  return out;
}

// A ring of shared tiles of `rows` × `cols` 16-bit elements (cols contiguous) in the canonical
// wgmma layout of the swizzle (gemm_wgmma.h), `stage_elements` apart from `base`.
struct WgmmaTile {
  int64_t base;  // element offset of slot 0 in the shared buffer
  int rows, cols;
  const WgmmaParams* p;
  int64_t stage_elements() const { return int64_t{rows} * cols; }
  // The element offset of (row, col) in slot `slot`.
  Expr offset(const Expr& slot, const Expr& row, const Expr& col) const {
    const int w = p->row_bytes(), e = p->column_elems();
    Expr at = i32(base) + slot * i32(stage_elements()) + col / e * i32(int64_t{rows} * w / 2) +
              row * (w / 2) + col % 8;
    Expr chunk = col % e / 8;
    if (p->swizzle == 0) return at;
    // The 128-byte row bits of the byte offset: row / (128 / w), of log2(w / 16) bits.
    const int bits = w == 128 ? 3 : w == 64 ? 2 : 1;
    Expr phase = row / (128 / w) % (1 << bits);
    return at + xor_bits(chunk, phase, bits) * 8;
  }
  // Element offset of the start of a descriptor for rows row0.. of a K-major tile at k-step kk.
  Expr k_major_start(const Expr& slot, const Expr& row0, const Expr& kk) const {
    const int w = p->row_bytes(), e = p->column_elems();
    return i32(base) + slot * i32(stage_elements()) + kk * 16 / e * i32(int64_t{rows} * w / 2) +
           row0 * (w / 2) + kk * 16 % e;
  }
};

}  // namespace

WgmmaParams wgmma_params(const Config& c) {
  WgmmaParams p{};
  p.bm = int(c.get("block_m"));
  p.bn = int(c.get("block_n"));
  p.bk = int(c.get("block_k"));
  p.stages = int(c.get("stages"));
  p.warpgroups = int(c.get("warpgroups"));
  p.swizzle = int(c.get("swizzle"));
  p.copy_bytes = int(c.get("copy_bytes"));
  p.raster = int(c.get("raster_group"));
  p.split_k = int(c.get("split_k"));
  p.epilogue = int(c.get("epilogue"));
  return p;
}

void define_wgmma_knobs(ConfigSpace& space, bool b_mn_major) {
  space.define_choice("block_m", {64, 128, 192, 256});
  space.define_choice("block_n", {64, 96, 128, 192, 256});
  space.define_choice("block_k", {32, 64});
  space.define_choice("stages", {2, 3, 4, 5, 6});
  space.define_choice("warpgroups", {1, 2});
  space.define_choice("swizzle", {0, 32, 64, 128});
  space.define_choice("copy_bytes", {2, 4, 8, 16});
  space.define_choice("raster_group", {1, 4, 8});
  space.define_choice("split_k", {1, 2, 4});
  space.define_choice("epilogue", {0, 1, 2});

  const bool nn = b_mn_major;
  space.add_constraint("every warpgroup owns whole m64 strips", [](const Config& c) {
    return c.get("block_m") % (64 * c.get("warpgroups")) == 0;
  });
  space.add_constraint("at most 128 accumulators per thread", [](const Config& c) {
    return c.get("block_m") / (64 * c.get("warpgroups")) * c.get("block_n") / 2 <= 128;
  });
  space.add_constraint("the swizzle's row fits the tiles", [nn](const Config& c) {
    const int64_t e = c.get("swizzle") == 0 ? 8 : c.get("swizzle") / 2;
    return c.get("block_k") % e == 0 && (!nn || c.get("block_n") % e == 0);
  });
}

void add_wgmma_shape_constraints(ConfigSpace& space, int64_t n, int64_t k, bool out16) {
  space.add_constraint("shared memory within the opt-in limit", [](const Config& c) {
    const int64_t bm = c.get("block_m"), bn = c.get("block_n"), bk = c.get("block_k");
    int64_t bytes = c.get("stages") * (bm + bn) * bk * 2;
    if (c.get("epilogue") == 2) bytes += bm * (bn + 4) * 4;
    return bytes <= tc::kMaxSharedBytes;
  });
  space.add_constraint("split-K accumulates fp32 C with scalar atomics", [out16](const Config& c) {
    return c.get("split_k") == 1 || (!out16 && c.get("epilogue") == 0);
  });
  space.add_constraint("split-K leaves every split a K slice", [k](const Config& c) {
    return c.get("split_k") <= ceil_div(k, c.get("block_k"));
  });
  space.add_constraint("paired stores need an even N, staged ones N % 4 == 0",
                       [n](const Config& c) {
                         return c.get("epilogue") == 0 || (c.get("epilogue") == 1 && n % 2 == 0) ||
                                (c.get("epilogue") == 2 && n % 4 == 0);
                       });
}

Kernel build_wgmma_gemm(const WgmmaGemmSpec& spec, const WgmmaParams& p) {
  const bool nn = spec.b_mn_major;
  const DType input = spec.input;
  const bool out16 = spec.out16;
  const Type in{input, 1};
  const int64_t m = spec.m, n = spec.n, k = spec.k;
  const int threads = p.threads(), strips = p.strips(), per_strip = p.acc_per_strip();
  const int elems = p.copy_bytes / 2;
  const int64_t tiles_m = ceil_div(m, p.bm), tiles_n = ceil_div(n, p.bn);
  const int64_t k_tiles = ceil_div(k, p.bk);
  const bool async = elems > 1;

  const Buffer& a = spec.a;
  const Buffer& b = spec.b;
  const Buffer& c = spec.c;

  WgmmaTile a_tile{0, p.bm, p.bk, &p};
  WgmmaTile b_tile = nn ? WgmmaTile{0, p.bk, p.bn, &p} : WgmmaTile{0, p.bn, p.bk, &p};
  b_tile.base = p.stages * a_tile.stage_elements();
  Buffer smem = Buffer::make("S", in, MemoryScope::shared,
                             p.stages * (a_tile.stage_elements() + b_tile.stage_elements()));
  Buffer acc = Buffer::make("Acc", Type::f32(), MemoryScope::local, int64_t{strips} * per_strip);
  const int stage_ld = p.bn + 4;  // staged C rows, padded against bank conflicts
  Buffer c_stage = Buffer::make("C_stage", Type::f32(), MemoryScope::shared,
                                p.epilogue == 2 ? int64_t{p.bm} * stage_ld : 1);

  Expr tx = int_var("tx"), wg = int_var("warpgroup"), warp = int_var("warp"), g = int_var("group"),
       q = int_var("thread_in_group");
  Expr tile_m = int_var("tile_m"), tile_n = int_var("tile_n");
  Expr first_tile = int_var("first_k_tile"), n_tiles = int_var("k_tiles");

  // Copies a [rows][cols] slice, whose (0, 0) is global (row0, col0) of a row-major matrix of
  // `ld` columns, into `tile`'s slot, `elems` elements per copy (cp.async with zero-fill).
  auto copy_tile = [&](const std::string& prefix, const Buffer& global, const WgmmaTile& tile,
                       const tc::SourceFn& source, const Expr& slot, const Expr& row0,
                       const Expr& col0) {
    const int per_row = tile.cols / elems, copies = tile.rows * tile.cols / elems;
    Expr v = int_var(prefix + "_cp") * threads + tx;
    Expr row = v / per_row, col = v % per_row * elems;
    tc::CopySource src = source(row0, col0, row, col);
    const std::vector<Expr>& ok = src.in_range;
    Expr dst_index = tile.offset(slot, row, col);
    Stmt body;
    if (async) {
      Expr src_index = ok.empty() ? src.index : select(all_of(ok), src.index, 0);
      Expr src_bytes = ok.empty() ? i32(2 * elems) : select(all_of(ok), i32(2 * elems), 0);
      body = cp_async(2 * elems, address_of(smem, dst_index), address_of(global, src_index),
                      src_bytes);
    } else {
      Stmt store = Store::make(smem, dst_index, Load::make(global, src.index));
      body = ok.empty()
                 ? store
                 : IfThenElse::make(all_of(ok), store,
                                    Store::make(smem, dst_index, f32_to_storage(input, f32(0.0))));
    }
    if (copies % threads != 0) body = IfThenElse::make(v < copies, body);
    return For::make(prefix + "_cp", 0, int(ceil_div(copies, threads)), ForKind::unrolled, body);
  };
  const tc::SourceFn& a_source = spec.a_source;
  const tc::SourceFn& b_source = spec.b_source;
  // The load stage: global K slice `k_tile` into ring slot `slot` (TMA can replace this).
  auto load_slice = [&](const Expr& k_tile, const Expr& slot) {
    Expr k0 = k_tile * p.bk;
    Stmt la = copy_tile("a", a, a_tile, a_source, slot, tile_m * p.bm, k0);
    Stmt lb = nn ? copy_tile("b", b, b_tile, b_source, slot, k0, tile_n * p.bn)
                 : copy_tile("b", b, b_tile, b_source, slot, tile_n * p.bn, k0);
    return Block::make({la, lb});
  };
  auto commit = [&]() { return async ? cp_async_commit() : Stmt(); };

  // Descriptors (gemm_wgmma.h): swizzled K-major tiles step 8 rows by SBO = 8·w bytes (LBO
  // unused); interleaved ones step 8 rows by 128 and 8 of K by rows·16. MN-major B steps 8 of
  // K by SBO = 8·w and a layout column of N by LBO = block_k·w; interleaved, 8 of N by
  // block_k·16 and 8 of K by 128.
  const int w = p.row_bytes();
  const WgmmaSwizzle sw = swizzle_code(p.swizzle);
  auto k_major_desc = [&](const WgmmaTile& t, const Expr& slot, const Expr& row0, const Expr& kk) {
    const int lbo = p.swizzle == 0 ? t.rows * 16 : 16, sbo = p.swizzle == 0 ? 128 : 8 * w;
    return wgmma_descriptor(address_of(smem, t.k_major_start(slot, row0, kk)), lbo, sbo, sw);
  };
  auto mn_major_desc = [&](const WgmmaTile& t, const Expr& slot, const Expr& kk) {
    const int lbo = p.swizzle == 0 ? 128 : p.bk * w, sbo = p.swizzle == 0 ? p.bk * 16 : 8 * w;
    Expr start = i32(t.base) + slot * i32(t.stage_elements()) + kk * 16 * (w / 2);
    return wgmma_descriptor(address_of(smem, start), lbo, sbo, sw);
  };

  Expr ii = int_var("i");
  Stmt fence_acc = For::make("i", 0, strips * per_strip, ForKind::unrolled,
                             wgmma_fence_operand(address_of(acc, ii)));
  // One block_k slice of the warpgroup's products from ring slot `slot`, one commit group.
  auto compute = [&](const Expr& slot) {
    Expr kk = int_var("kk"), j = int_var("j");
    const int rows0 = p.bm / p.warpgroups;
    // Strip j of warpgroup wg: tile rows wg·rows0 + 64·j, a multiple of 8 rows, so the
    // descriptor starts on a row group of the layout.
    Expr strip_rows = wg * rows0 + j * 64;
    Expr desc_a = k_major_desc(a_tile, slot, strip_rows, kk);
    Expr desc_b = nn ? mn_major_desc(b_tile, slot, kk) : k_major_desc(b_tile, slot, i32(0), kk);
    Stmt mma = wgmma_ss(WgmmaShape{p.bn, input, false, nn}, address_of(acc, j * per_strip), desc_a,
                        desc_b, i32(1));
    return Block::make({fence_acc, wgmma_fence(),
                        For::make("kk", 0, p.bk / 16, ForKind::unrolled,
                                  For::make("j", 0, strips, ForKind::unrolled, mma)),
                        wgmma_commit_group(), wgmma_wait_group(0), fence_acc});
  };

  // The ring: slices 0..stages-2 in flight before the loop; each iteration waits for its
  // slice, refills the slot the previous iteration read (its wgmmas are complete), computes.
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
      Block::make({async ? cp_async_wait(s - 2) : Stmt(), fence_proxy_async(), Sync::make(),
                   IfThenElse::make(next < n_tiles, load_slice(first_tile + next, next % s)),
                   commit(), compute(ko % s)}));

  Stmt init =
      For::make("i", 0, strips * per_strip, ForKind::unrolled, Store::make(acc, ii, f32(0.0)));

  // Epilogue. Register 2·pp (+1) of strip j holds row 16·warp + group + 8·(pp % 2) of the strip
  // and columns 8·(pp / 2) + 2·thread_in_group (+1) (the ISA's D fragment layout).
  Expr j = int_var("j"), pp = int_var("p"), e = int_var("e");
  Expr local_row = wg * (p.bm / p.warpgroups) + j * 64 + warp * 16 + g + pp % 2 * 8;
  Expr local_col = pp / 2 * 8 + q * 2;
  Expr grow = tile_m * p.bm + local_row, gcol = tile_n * p.bn + local_col;
  Expr reg = j * per_strip + pp * 2;
  Stmt write;
  auto per_pair = [&](const Stmt& st) {
    return For::make("j", 0, strips, ForKind::unrolled,
                     For::make("p", 0, per_strip / 2, ForKind::unrolled, st));
  };
  if (p.epilogue == 0) {
    Expr index = grow * i32(n) + gcol + e;
    Expr v = Load::make(acc, reg + e);
    Stmt store = p.split_k > 1 ? atomic_add(c, index, v)
                               : Store::make(c, index, out16 ? f32_to_storage(input, v) : v);
    write = per_pair(For::make("e", 0, 2, ForKind::unrolled,
                               IfThenElse::make(grow < i32(m) && gcol + e < i32(n), store)));
  } else if (p.epilogue == 1) {
    Expr value = out16 ? pack_x2(input, Load::make(acc, reg), Load::make(acc, reg + 1))
                       : Load::make(acc, reg, 2);
    write = per_pair(IfThenElse::make(grow < i32(m) && gcol < i32(n),
                                      Store::make(c, grow * i32(n) + gcol, value)));
  } else {
    Stmt stage =
        per_pair(Store::make(c_stage, local_row * stage_ld + local_col, Load::make(acc, reg, 2)));
    const int per_row = p.bn / 4, copies = p.bm * per_row;
    Expr v = int_var("c_cp") * threads + tx;
    Expr row = v / per_row, col = v % per_row * 4;
    Expr out_row = tile_m * p.bm + row, out_col = tile_n * p.bn + col;
    Expr at = row * stage_ld + col;
    Expr index = out_row * i32(n) + out_col;
    Stmt store;
    if (out16) {
      store = Block::make(
          {Store::make(c, index,
                       pack_x2(input, Load::make(c_stage, at), Load::make(c_stage, at + 1))),
           Store::make(c, index + 2,
                       pack_x2(input, Load::make(c_stage, at + 2), Load::make(c_stage, at + 3)))});
    } else {
      store = Store::make(c, index, Load::make(c_stage, at, 4));
    }
    Stmt guarded = IfThenElse::make(out_row < i32(m) && out_col < i32(n), store);
    if (copies % threads != 0) guarded = IfThenElse::make(v < copies, guarded);
    write = Block::make(
        {stage, Sync::make(),
         For::make("c_cp", 0, int(ceil_div(copies, threads)), ForKind::unrolled, guarded)});
  }

  Stmt body = Block::make({init, Block::make(prologue), loop, write});
  body = Allocate::make(acc, body);
  body = Allocate::make(c_stage, body);
  body = Allocate::make(smem, body);
  Expr lane = tx % 32;
  body = LetStmt::make("thread_in_group", lane % 4, body);
  body = LetStmt::make("group", lane / 4, body);
  body = LetStmt::make("warp", tx % 128 / 32, body);
  body = LetStmt::make("warpgroup", tx / 128, body);
  body = tc::bind_tile_grid(body, {tiles_m, tiles_n, k_tiles, p.split_k, p.raster, threads});

  Kernel kernel;
  kernel.name = spec.name;
  kernel.buffers = spec.parameters;
  kernel.body = body;
  return kernel;
}

std::vector<std::string> wgmma_loop_names() {
  return {"bx", "kz", "tx", "k_outer", "kk", "j", "a_cp", "b_cp", "i", "p", "e", "c_cp"};
}

std::vector<std::string> wgmma_local_buffer_names() { return {"S", "C_stage", "Acc"}; }

}  // namespace cutune::wg
