#include "kernels/wgmma_blocks.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/schedule_helpers.h"
#include "src/base/errors.h"
#include "src/ir/hopper_intrinsics.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_mutator.h"
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

TmaSwizzle tma_swizzle_code(int bytes) {
  switch (bytes) {
    case 128:
      return TmaSwizzle::b128;
    case 64:
      return TmaSwizzle::b64;
    case 32:
      return TmaSwizzle::b32;
    default:
      return TmaSwizzle::none;
  }
}

// The knob's value, or `fallback` where the space lacks it (a template without TMA knobs).
int knob_or(const Config& c, const char* name, int fallback) {
  const std::vector<Knob>& knobs = c.space().knobs();
  const bool has =
      std::any_of(knobs.begin(), knobs.end(), [&](const Knob& k) { return k.name() == name; });
  return has ? int(c.get(name)) : fallback;
}

// Floats that pad a staged C row (block_n, a multiple of 32, plus this): the fragments' float2
// stores go to the banks by half-warps of four rows, which 8 words of padding put on disjoint
// banks (4 left rows 0 and 1, 2 and 3 sharing banks: two wavefronts a half-warp).
constexpr int kStagePad = 8;

// Shared bytes of the ring and the staged epilogue (the mbarriers excluded).
int64_t ring_and_stage_bytes(const Config& c) {
  const int64_t bm = c.get("block_m"), bn = c.get("block_n"), bk = c.get("block_k");
  int64_t bytes = c.get("stages") * (bm + bn) * bk * 2;
  if (c.get("epilogue") == 2) bytes += bm * (bn + kStagePad) * 4;
  return bytes;
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
  // Element offset of the start of a descriptor for rows row0.. of a K-major tile at k-step kk,
  // from slot 0's start: affine in slot and row0 (kk is unrolled).
  Expr k_major_step(const Expr& slot, const Expr& row0, const Expr& kk) const {
    const int w = p->row_bytes(), e = p->column_elems();
    return slot * i32(stage_elements()) + kk * 16 / e * i32(int64_t{rows} * w / 2) +
           row0 * (w / 2) + kk * 16 % e;
  }
  Expr k_major_start(const Expr& slot, const Expr& row0, const Expr& kk) const {
    return i32(base) + k_major_step(slot, row0, kk);
  }
  // The same for an MN-major tile (B of nn) at k-step kk.
  Expr mn_major_step(const Expr& slot, const Expr& kk) const {
    return slot * i32(stage_elements()) + kk * 16 * (p->row_bytes() / 2);
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
  p.split_k = int(split_k_of(c));
  p.epilogue = int(c.get("epilogue"));
  p.loads = knob_or(c, "loads", 0);
  p.producer = knob_or(c, "producer", 0);
  p.mma_pipe = knob_or(c, "mma_pipe", 0);
  p.tiles_per_block = knob_or(c, "tiles_per_block", 1);
  p.pingpong = knob_or(c, "pingpong", 0);
  return p;
}

int64_t split_k_of(const Config& c) {
  return c.get("split_k") * (knob_or(c, "split_k_wide", 0) == 1 ? 4 : 1);
}

int64_t reference_split_k(int64_t tiles, int64_t k_slices) {
  int64_t split = 1;
  if (tiles >= 64) return split;
  while (split < 16 && tiles * split < 128 && k_slices >= 2 * split * 4) split *= 2;
  return split;
}

nlohmann::json ring_knobs(int block_m, int block_n, int block_k, int stages, int warpgroups,
                          int swizzle, int copy_bytes, int raster_group, int epilogue) {
  return {{"block_m", block_m},       {"block_n", block_n},           {"block_k", block_k},
          {"stages", stages},         {"warpgroups", warpgroups},     {"swizzle", swizzle},
          {"copy_bytes", copy_bytes}, {"raster_group", raster_group}, {"split_k", 1},
          {"epilogue", epilogue}};
}

void set_split_k(nlohmann::json& knobs, int64_t splits) {
  const bool wide = splits >= 8;
  knobs["split_k"] = wide ? splits / 4 : splits;
  knobs["split_k_wide"] = wide ? 1 : 0;
}

bool register_budget_holds(int warpgroups) {
  return 128 * warpgroups * kConsumerRegisters + 128 * kProducerRegisters <= 65536;
}

void define_wgmma_load_knobs(ConfigSpace& space, bool a_tma, bool b_tma) {
  const bool any = a_tma || b_tma, both = a_tma && b_tma;
  // Without TMA for both operands there is no producer, and so one tile a block and no
  // ping-pong: those knobs are not defined (knob_or reads them as 0 and 1).
  space.define_choice("loads", {0, 1}, 0);
  if (both) space.define_choice("producer", {0, 1}, 0);
  space.define_choice("mma_pipe", {0, 1}, 0);
  space.add_constraint("TMA loads need an operand a 2-D box can load",
                       [any](const Config& c) { return any || c.get("loads") == 0; });
  if (both) {
    space.add_constraint("with TMA loads copy_bytes keeps one value (16)", [](const Config& c) {
      return c.get("loads") == 0 || c.get("copy_bytes") == 16;
    });
    space.add_constraint(
        "a producer warpgroup needs TMA loads of both operands",
        [](const Config& c) { return c.get("producer") == 0 || c.get("loads") == 1; });
  }
  space.add_constraint(
      "wgmmas stay in flight across slices only with a producer or a ring of 3 or more slots",
      [](const Config& c) {
        return c.get("mma_pipe") == 0 || knob_or(c, "producer", 0) == 1 || c.get("stages") >= 3;
      });
  if (both) {
    space.add_constraint("the setmaxnreg counts fit the block's registers", [](const Config& c) {
      return c.get("producer") == 0 || register_budget_holds(int(c.get("warpgroups")));
    });
  }
  space.add_constraint(
      "shared memory with the mbarriers within the opt-in limit", [](const Config& c) {
        return c.get("loads") == 0 ||
               ring_and_stage_bytes(c) + 16 * c.get("stages") <= tc::kMaxSharedBytes;
      });
  if (both) {
    space.define_choice("tiles_per_block", {1, 2, 4, 8}, 1);
    space.add_constraint("several tiles a block need a producer and an unstaged epilogue",
                         [](const Config& c) {
                           return c.get("tiles_per_block") == 1 ||
                                  (c.get("producer") == 1 && c.get("epilogue") != 2);
                         });
    space.define_choice("pingpong", {0, 1}, 0);
    space.add_constraint("ping-pong consumers need several tiles a block and two warpgroups",
                         [](const Config& c) {
                           return c.get("pingpong") == 0 ||
                                  (c.get("tiles_per_block") > 1 && c.get("warpgroups") == 2);
                         });
  }
  space.define_choice("split_k_wide", {0, 1}, 0);
  space.add_constraint("wide split-K takes split_k 2 or 4 (to 8 or 16)", [](const Config& c) {
    return c.get("split_k_wide") == 0 || c.get("split_k") >= 2;
  });
}

void add_tiles_per_block_constraint(ConfigSpace& space, int64_t m, int64_t n) {
  space.add_constraint("no more tiles a block than output tiles", [m, n](const Config& c) {
    return c.get("tiles_per_block") <=
           ceil_div(m, c.get("block_m")) * ceil_div(n, c.get("block_n"));
  });
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
  // With ping-pong consumers (define_wgmma_load_knobs) a warpgroup holds a whole tile.
  auto sharing = [](const Config& c) {
    return knob_or(c, "pingpong", 0) == 1 ? int64_t{1} : c.get("warpgroups");
  };
  space.add_constraint("every warpgroup owns whole m64 strips", [sharing](const Config& c) {
    return c.get("block_m") % (64 * sharing(c)) == 0;
  });
  space.add_constraint("at most 128 accumulators per thread", [sharing](const Config& c) {
    return c.get("block_m") / (64 * sharing(c)) * c.get("block_n") / 2 <= 128;
  });
  space.add_constraint("the swizzle's row fits the tiles", [nn](const Config& c) {
    const int64_t e = c.get("swizzle") == 0 ? 8 : c.get("swizzle") / 2;
    return c.get("block_k") % e == 0 && (!nn || c.get("block_n") % e == 0);
  });
}

void add_wgmma_shape_constraints(ConfigSpace& space, int64_t n, int64_t k, bool out16) {
  space.add_constraint("shared memory within the opt-in limit", [](const Config& c) {
    return ring_and_stage_bytes(c) <= tc::kMaxSharedBytes;
  });
  space.add_constraint("split-K accumulates fp32 C with scalar atomics", [out16](const Config& c) {
    return split_k_of(c) == 1 || (!out16 && c.get("epilogue") == 0);
  });
  space.add_constraint("split-K leaves every split a K slice", [k](const Config& c) {
    return split_k_of(c) <= ceil_div(k, c.get("block_k"));
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
  const int threads = p.threads(), consumers = p.consumer_threads();
  const int strips = p.strips(), per_strip = p.acc_per_strip();
  const int elems = p.copy_bytes / 2;
  const int64_t tiles_m = ceil_div(m, p.bm), tiles_n = ceil_div(n, p.bn);
  const int64_t k_tiles = ceil_div(k, p.bk);
  const bool tma_a = p.tma() && spec.a_tma.has_value();
  const bool tma_b = p.tma() && spec.b_tma.has_value();
  const bool any_tma = tma_a || tma_b, any_copy = !tma_a || !tma_b;
  const bool async = elems > 1;
  const bool producer = p.producer == 1;
  CUTUNE_CHECK(!producer || (tma_a && tma_b),
               fmt::format("{}: a producer warpgroup needs TMA loads of both operands", spec.name));

  const Buffer& a = spec.a;
  const Buffer& b = spec.b;
  const Buffer& c = spec.c;

  WgmmaTile a_tile{0, p.bm, p.bk, &p};
  WgmmaTile b_tile = nn ? WgmmaTile{0, p.bk, p.bn, &p} : WgmmaTile{0, p.bn, p.bk, &p};
  b_tile.base = p.stages * a_tile.stage_elements();
  Buffer smem = Buffer::make("S", in, MemoryScope::shared,
                             p.stages * (a_tile.stage_elements() + b_tile.stage_elements()));
  Buffer acc = Buffer::make("Acc", Type::f32(), MemoryScope::local, int64_t{strips} * per_strip);
  const int stage_ld = p.bn + kStagePad;  // staged C rows, padded against bank conflicts
  Buffer c_stage = Buffer::make("C_stage", Type::f32(), MemoryScope::shared,
                                p.epilogue == 2 ? int64_t{p.bm} * stage_ld : 1);
  // Ring slot s's "full" barrier is mbar_full[s] (one arrival: the expect_tx; then the copies'
  // bytes), its "empty" one mbar_empty[s] (every consumer thread arrives), with a producer only.
  Buffer mbar_full = Buffer::make("mbar_full", Type::i64(), MemoryScope::shared, p.stages);
  Buffer mbar_empty = Buffer::make("mbar_empty", Type::i64(), MemoryScope::shared, p.stages);
  // Ping-pong: warpgroup w waits on mbar_order[w] for the end of the previous tile's main loop
  // (its 128 threads arrive), so the warpgroups take the tensor cores in the tiles' order.
  const bool pingpong = p.pingpong == 1;
  Buffer mbar_order = Buffer::make("mbar_order", Type::i64(), MemoryScope::shared, p.warpgroups);

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

  // TMA: one box per layout column of a tile (gemm_wgmma.h), whose image with the swizzle is
  // that column: E = swizzle/2 elements (8 without swizzle) of the view's inner dimension by
  // the tile's rows. The box origin is the slice's (row0, col0) plus the column's E·c.
  const int e_cols = p.column_elems();
  std::vector<TensorMapParam> maps;
  auto map_for = [&](const Buffer& global, const WgmmaGemmSpec::TmaView& view,
                     const WgmmaTile& tile) {
    TensorMapDesc d;
    d.buffer = global->name;
    d.dtype = input;
    d.dims[0] = view.inner;
    d.dims[1] = view.outer;
    d.row_stride_bytes = view.row_stride_bytes;
    d.box[0] = e_cols;
    d.box[1] = tile.rows;
    d.swizzle = spec.hooks.wrong_map_swizzle ? TmaSwizzle::none : tma_swizzle_code(p.swizzle);
    maps.push_back(TensorMapParam{global->name + "_map", d});
    return maps.back().name;
  };
  const std::string a_map = tma_a ? map_for(a, *spec.a_tma, a_tile) : "";
  const std::string b_map = tma_b ? map_for(b, *spec.b_tma, b_tile) : "";
  int64_t slot_tx_bytes = 0;  // what one slot's TMA copies bring (its expect_tx)
  if (tma_a) slot_tx_bytes += a_tile.stage_elements() * 2;
  if (tma_b) slot_tx_bytes += b_tile.stage_elements() * 2;
  auto full = [&](const Expr& slot) { return address_of(mbar_full, slot); };
  auto empty = [&](const Expr& slot) { return address_of(mbar_empty, slot); };
  auto tma_tile = [&](const std::string& prefix, const std::string& map, const WgmmaTile& tile,
                      const Expr& slot, const Expr& row0, const Expr& col0) {
    Expr col = int_var(prefix + "_tma");
    return For::make(prefix + "_tma", 0, tile.cols / e_cols, ForKind::unrolled,
                     tma_load_2d(address_of(smem, tile.offset(slot, i32(0), col * e_cols)),
                                 tensor_map_ref(map), full(slot), col0 + col * e_cols, row0));
  };
  // The thread that issues the copies: one lane, by elect.sync, of warp 0, or of the producer
  // warpgroup's first warp (written (tx / 32) % 4 == 0 inside the producer's branch, which the
  // feature analysis, taking conditions as independent, then weighs right). Under `tx == 0`
  // ptxas wraps every TMA copy in a loop over the active lanes' operand values (ELECT ...
  // BRA.U.ANY: 12 such loops in the 128x128x64 kernel without a producer); under elect.sync it
  // issues each copy once. Which lane is elected is unspecified: nothing else may assume it is
  // lane 0. Thread 0 initialises the barriers.
  Expr warp_in_block = int_var("block_warp");  // warp_uniform(tx / 32), bound with TMA below
  Expr elected = eq(warp_in_block, 0) && elect_one();
  Expr producer_elected = eq(warp_in_block % 4, 0) && elect_one();
  Expr thread0 = eq(tx, 0);

  const tc::SourceFn& a_source = spec.a_source;
  const tc::SourceFn& b_source = spec.b_source;
  // The load stage: global K slice `k_tile` into ring slot `slot`. Operands TMA loads are
  // issued by the elected thread after the slot's expect_tx; the others are cp.async copies
  // (or element copies) by every thread.
  // `issuer`: the caller runs in the elected thread alone, which issues without a test;
  // `before_issue` runs in the issuing thread first (the wait for the slot's release).
  auto load_slice = [&](const Expr& k_tile, const Expr& slot, bool issuer = false,
                        const Stmt& before_issue = Stmt()) {
    Expr k0 = k_tile * p.bk;
    Expr a_row0 = tile_m * p.bm, a_col0 = k0;
    Expr b_row0 = nn ? k0 : tile_n * p.bn, b_col0 = nn ? tile_n * p.bn : k0;
    std::vector<Stmt> copies, issue;
    if (before_issue.defined()) issue.push_back(before_issue);
    if (any_tma) {
      issue.push_back(
          mbarrier_arrive_expect_tx(full(slot), i32(slot_tx_bytes + spec.hooks.expect_tx_delta)));
    }
    if (tma_a) {
      issue.push_back(tma_tile("a", a_map, a_tile, slot, a_row0, a_col0));
    } else {
      copies.push_back(copy_tile("a", a, a_tile, a_source, slot, a_row0, a_col0));
    }
    if (tma_b) {
      issue.push_back(tma_tile("b", b_map, b_tile, slot, b_row0, b_col0));
    } else {
      copies.push_back(copy_tile("b", b, b_tile, b_source, slot, b_row0, b_col0));
    }
    if (!issue.empty()) {
      copies.push_back(issuer ? Block::make(issue) : IfThenElse::make(elected, Block::make(issue)));
    }
    return Block::make(copies);
  };
  auto commit = [&]() { return async && any_copy ? cp_async_commit() : Stmt(); };
  // Slice k_outer's parity on its slot's full barrier: the slot's fill number mod 2.
  Expr ko = int_var("k_outer");
  auto wait_full = [&](const Expr& kt) {
    if (!any_tma || spec.hooks.skip_full_wait) return Stmt();
    return mbarrier_wait_parity(full(kt % p.stages), kt / p.stages % 2);
  };

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
    Expr start = i32(t.base) + t.mn_major_step(slot, kk);
    return wgmma_descriptor(address_of(smem, start), lbo, sbo, sw);
  };
  // Each warpgroup makes its first A and B descriptors (slot 0, k-step 0, strip 0) once, before
  // its loop; every other one is that plus the start's distance in 16-byte units, which is
  // where a descriptor's start address field sits (bits 0-13; shared memory stays below 256
  // KiB, so the sum never carries out of it). The descriptors are the same as made afresh, with
  // one 64-bit add each instead of the conversion, shifts and masks.
  // The warpgroup's first tile row: each one's share of the rows, or 0 with ping-pong.
  Expr wg_row0 = pingpong ? i32(0) : wg * (p.bm / p.warpgroups);
  Expr desc_a0 = Var::make(Type::i64(), "desc_a0"), desc_b0 = Var::make(Type::i64(), "desc_b0");
  auto with_first_descriptors = [&](const Stmt& body) {
    Expr b0 = nn ? mn_major_desc(b_tile, i32(0), i32(0))
                 : k_major_desc(b_tile, i32(0), i32(0), i32(0));
    return LetStmt::make("desc_a0", k_major_desc(a_tile, i32(0), wg_row0, i32(0)),
                         LetStmt::make("desc_b0", b0, body));
  };
  auto step = [](const Expr& first, const Expr& elements) {
    return first + cast(Type::i64(), elements / 8);  // 8 elements: 16 bytes
  };

  Expr ii = int_var("i");
  Stmt fence_acc = For::make("i", 0, strips * per_strip, ForKind::unrolled,
                             wgmma_fence_operand(address_of(acc, ii)));
  // One block_k slice of the warpgroup's products from ring slot `slot`, one commit group;
  // then waits until at most `pending` groups are unfinished.
  auto compute = [&](const Expr& slot, int pending = 0) {
    Expr kk = int_var("kk"), j = int_var("j");
    // Strip j of warpgroup wg: tile rows wg_row0 + 64·j, a multiple of 8 rows, so the
    // descriptor starts on a row group of the layout.
    Expr desc_a = step(desc_a0, a_tile.k_major_step(slot, j * 64, kk));
    Expr desc_b = step(desc_b0, nn ? b_tile.mn_major_step(slot, kk)
                                   : b_tile.k_major_step(slot, i32(0), kk));
    Stmt mma = wgmma_ss(WgmmaShape{p.bn, input, false, nn}, address_of(acc, j * per_strip), desc_a,
                        desc_b, i32(1));
    return Block::make({fence_acc, wgmma_fence(),
                        For::make("kk", 0, p.bk / 16, ForKind::unrolled,
                                  For::make("j", 0, strips, ForKind::unrolled, mma)),
                        wgmma_commit_group(), wgmma_wait_group(pending), fence_acc});
  };

  const int s = p.stages;
  Stmt init =
      For::make("i", 0, strips * per_strip, ForKind::unrolled, Store::make(acc, ii, f32(0.0)));
  Stmt mainloop, produce, consume;
  // Several tiles a block (with a producer): `body` for each of the block's tiles, under its
  // tile_m and tile_n; the last blocks may have fewer.
  const tc::TileGrid grid{
      tiles_m, tiles_n, k_tiles, p.split_k, p.raster, threads, producer ? p.tiles_per_block : 1};
  const bool several_tiles = grid.tiles_per_block > 1;
  auto each_tile = [&](const Stmt& body) {
    Expr tile = int_var("tile");
    return For::make("tile_t", 0, grid.tiles_per_block, ForKind::serial,
                     LetStmt::make("tile", int_var("bx") + int_var("tile_t") * i32(grid.blocks()),
                                   IfThenElse::make(tile < i32(tiles_m * tiles_n),
                                                    tc::bind_tile(body, grid, tile))));
  };
  // All-TMA rings release slots through their empty barriers (every consumer thread arrives
  // after its slice's wgmmas; the issuing thread waits for the phase before refilling), so the
  // loop has no block-wide barrier; a ring with cp.async copies needs the barrier, which also
  // tells that every warpgroup is done with the slot the previous iteration read.
  const bool release_by_barrier = any_copy;
  auto wait_empty = [&](const Expr& kt) {
    // Fill kt / stages of the slot waits for the consumers' release of fill kt / stages - 1
    // (the empty barrier's phase of that number); a fresh barrier passes parity 1 at once.
    return mbarrier_wait_parity(empty(kt % s), (kt / s + 1) % 2);
  };
  const bool pipe = p.mma_pipe == 1;
  // The planted bug: the lead and releases of a ring whose wgmmas are done at each slice's end.
  const bool early = pipe && spec.hooks.release_in_flight;
  // A loop iteration's slice `ko` through empty barriers: `prefix` (its wait, a refill), the
  // slice's wgmmas, and the release of the slot whose wgmmas are done: its own, or with
  // mma_pipe the previous slice's after this one's wait_group 1, the last slot after the
  // loop's final wait.
  // `ring`: the slice's number in the ring's sequence, ko, or base + ko for a block's later
  // tiles (slots and phases run on across a block's tiles).
  auto released_loop = [&](std::vector<Stmt> prefix, const Expr& ring) {
    if (!pipe) {
      prefix.push_back(compute(ring % s));
      prefix.push_back(mbarrier_arrive(empty(ring % s)));
      return For::make("k_outer", 0, n_tiles, ForKind::serial, Block::make(prefix));
    }
    prefix.push_back(compute(ring % s, 1));
    prefix.push_back(
        early ? mbarrier_arrive(empty(ring % s))
              : IfThenElse::make(ko > i32(0), mbarrier_arrive(empty((ring + (s - 1)) % s))));
    // The last slice's slot: `ring` at ko = n_tiles - 1.
    Expr last_ring = substitute(ring, "k_outer", n_tiles);
    Stmt last = early ? Stmt()
                      : IfThenElse::make(n_tiles > i32(0),
                                         mbarrier_arrive(empty((last_ring + (s - 1)) % s)));
    return Block::make({For::make("k_outer", 0, n_tiles, ForKind::serial, Block::make(prefix)),
                        wgmma_wait_group(0), fence_acc, last});
  };
  if (!producer) {
    // The ring: `lead` slices in flight before the loop; each iteration waits for its slice
    // (its cp.async group, or its full barrier's phase), refills the slot whose wgmmas are
    // done once it is released, and computes. Without mma_pipe that is the slot the previous
    // iteration read (lead = stages - 1); with it, a slice's wgmmas stay in flight until the
    // next slice's wait_group 1, so the refill takes the slot read two iterations before
    // (lead = stages - 2) and the loop ends with a wait for all.
    const int lead = pipe && !early ? s - 2 : s - 1;
    std::vector<Stmt> prologue;
    for (int st = 0; st < lead; ++st) {
      prologue.push_back(IfThenElse::make(i32(st) < n_tiles, load_slice(first_tile + st, st)));
      prologue.push_back(commit());
    }
    Expr next = ko + lead;
    Stmt loop, drain;
    if (release_by_barrier) {
      // The barrier also tells that every warpgroup passed the previous iteration's wait.
      loop = For::make(
          "k_outer", 0, n_tiles, ForKind::serial,
          Block::make({async ? cp_async_wait(lead - 1) : Stmt(), wait_full(ko),
                       fence_proxy_async(), Sync::make(),
                       IfThenElse::make(next < n_tiles, load_slice(first_tile + next, next % s)),
                       commit(), compute(ko % s, pipe ? 1 : 0)}));
      if (pipe) drain = Block::make({wgmma_wait_group(0), fence_acc});
    } else {
      Stmt refill = IfThenElse::make(
          next < n_tiles, load_slice(first_tile + next, next % s, false, wait_empty(next)));
      loop = released_loop({wait_full(ko), refill}, ko);
    }
    mainloop = Block::make(
        {init, Block::make(prologue), with_first_descriptors(Block::make({loop, drain}))});
  } else {
    // Warp specialisation: the producer's elected thread fills slot k % stages once the
    // consumers have released its previous fill, the consumers wait on the full barrier,
    // compute and release.
    // With several tiles a block, both sides run the same sequence of tiles, and slice ko of
    // the block's tile t is number t·k_tiles + ko of the ring.
    Expr kl = int_var("k_load");
    Expr base = several_tiles ? int_var("tile_t") * n_tiles : Expr();
    auto ring = [&](const Expr& k) { return base.defined() ? base + k : k; };
    produce = For::make("k_load", 0, n_tiles, ForKind::serial,
                        load_slice(first_tile + kl, ring(kl) % s, true, wait_empty(ring(kl))));
    consume = released_loop({wait_full(ring(ko))}, ring(ko));
    // Both sides are assembled after the epilogue, which several tiles a block repeat too.
  }

  // Epilogue. Register 2·pp (+1) of strip j holds row 16·warp + group + 8·(pp % 2) of the strip
  // and columns 8·(pp / 2) + 2·thread_in_group (+1) (the ISA's D fragment layout).
  Expr j = int_var("j"), pp = int_var("p"), e = int_var("e");
  Expr local_row = wg_row0 + j * 64 + warp * 16 + g + pp % 2 * 8;
  Expr local_col = pp / 2 * 8 + q * 2;
  Expr grow = tile_m * p.bm + local_row, gcol = tile_n * p.bn + local_col;
  Expr reg = j * per_strip + pp * 2;
  // `write` runs in the consumer threads; a staged epilogue's copy-out (`copy_out`) runs after
  // a barrier of the whole block, in the consumer threads too.
  Stmt write, copy_out;
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
    write =
        per_pair(Store::make(c_stage, local_row * stage_ld + local_col, Load::make(acc, reg, 2)));
    const int per_row = p.bn / 4, copies = p.bm * per_row;
    Expr v = int_var("c_cp") * consumers + tx;
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
    if (copies % consumers != 0) guarded = IfThenElse::make(v < copies, guarded);
    copy_out = For::make("c_cp", 0, int(ceil_div(copies, consumers)), ForKind::unrolled, guarded);
  }

  if (producer) {
    // With several tiles a block each side runs its part once per tile, the consumers their
    // epilogue too.
    if (several_tiles) {
      CUTUNE_CHECK(!copy_out.defined(), "several tiles a block store unstaged");
      Stmt tile_body = Block::make({init, consume, write});
      if (pingpong) {
        // The block's tile t is warpgroup t % W's. Its main loop starts once tile t - 1's has
        // ended (phase (t - 1) / W of mbar_order[w]; the first tile waits for none), and its end
        // lets tile t + 1's owner start, before this warpgroup's epilogue. Beyond the order of
        // the tensor cores, this keeps every wait on a ring slot's full barrier at most one
        // phase ahead of the slot: the owner of tile t + 1, which skips tile t's slices, waits
        // for its first slices only once tile t's have all arrived.
        Expr t = int_var("tile_t");
        const int wgs = p.warpgroups;
        auto order = [&](const Expr& w) { return address_of(mbar_order, w); };
        Stmt wait_turn = spec.hooks.skip_turn_wait
                             ? Stmt()
                             : IfThenElse::make(t > i32(0), mbarrier_wait_parity(
                                                                order(t % wgs), (t - 1) / wgs % 2));
        Stmt pass_turn = mbarrier_arrive(order((t + 1) % wgs));
        // t % W == w, written (t + W - w) % W == 0 so that the feature analysis, which takes
        // a comparison's operands as independent, weighs it 1/W.
        tile_body = IfThenElse::make(eq((t + i32(wgs) - wg) % wgs, 0),
                                     Block::make({wait_turn, init, consume, pass_turn, write}));
      }
      mainloop = Block::make(
          {setmaxnreg(true, kConsumerRegisters), with_first_descriptors(each_tile(tile_body))});
      write = Stmt();
      produce = each_tile(produce);
    } else {
      mainloop = Block::make(
          {setmaxnreg(true, kConsumerRegisters), init, with_first_descriptors(consume)});
    }
    produce = Block::make(
        {setmaxnreg(false, kProducerRegisters), IfThenElse::make(producer_elected, produce)});
  }

  std::vector<Stmt> parts;
  if (any_tma) {
    // Barriers are initialised, and made visible to the TMA unit, before anyone uses them.
    std::vector<Stmt> setup;
    for (int st = 0; st < s; ++st) {
      setup.push_back(mbarrier_init(full(i32(st)), i32(1)));
      // Every consumer thread of the slice's warpgroups releases it: all, or the tile's owner.
      const int releasers = pingpong ? 128 : consumers;
      if (!release_by_barrier) setup.push_back(mbarrier_init(empty(i32(st)), i32(releasers)));
    }
    for (int w = 0; pingpong && w < p.warpgroups; ++w) {
      setup.push_back(mbarrier_init(address_of(mbar_order, i32(w)), i32(128)));
    }
    for (const TensorMapParam& map : maps) {
      setup.push_back(prefetch_tensormap(tensor_map_ref(map.name)));
    }
    setup.push_back(fence_proxy_async());
    parts.push_back(IfThenElse::make(thread0, Block::make(setup)));
    parts.push_back(Sync::make());
  }
  if (!producer) {
    parts.push_back(mainloop);
    parts.push_back(write);
    if (copy_out.defined()) parts.push_back(Block::make({Sync::make(), copy_out}));
  } else {
    // The branches are uniform across each warpgroup, as wgmma and setmaxnreg need.
    Expr is_consumer = wg < i32(p.warpgroups);
    parts.push_back(IfThenElse::make(is_consumer, Block::make({mainloop, write}), produce));
    if (copy_out.defined()) {
      parts.push_back(Sync::make());
      parts.push_back(IfThenElse::make(is_consumer, copy_out));
    }
  }

  Stmt body = Block::make(parts);
  body = Allocate::make(acc, body);
  body = Allocate::make(c_stage, body);
  if (!release_by_barrier) body = Allocate::make(mbar_empty, body);
  if (pingpong) body = Allocate::make(mbar_order, body);
  if (any_tma) body = Allocate::make(mbar_full, body);
  body = Allocate::make(smem, body);
  Expr lane = tx % 32;
  body = LetStmt::make("thread_in_group", lane % 4, body);
  body = LetStmt::make("group", lane / 4, body);
  body = LetStmt::make("warp", tx % 128 / 32, body);
  // Broadcast, so that the compiler keeps the warpgroup index and the descriptors made from it
  // in uniform registers (as it cannot tell threadIdx.x / 128 is the same in every lane).
  body = LetStmt::make("warpgroup", warp_uniform(tx / 128), body);
  if (any_tma) body = LetStmt::make("block_warp", warp_uniform(tx / 32), body);
  body = tc::bind_tile_grid(body, grid);

  Kernel kernel;
  kernel.name = spec.name;
  kernel.buffers = spec.parameters;
  kernel.body = body;
  kernel.tensor_maps = std::move(maps);
  // setmaxnreg needs the register count at entry fixed: __launch_bounds__(threads, 1).
  if (producer) kernel.min_blocks = 1;
  return kernel;
}

std::vector<std::string> wgmma_loop_names() {
  return {"bx", "kz", "tx", "k_outer", "kk",     "j",     "a_cp",  "b_cp",
          "i",  "p",  "e",  "c_cp",    "k_load", "a_tma", "b_tma", "tile_t"};
}

std::vector<std::string> wgmma_local_buffer_names() {
  return {"S", "C_stage", "Acc", "mbar_full", "mbar_empty", "mbar_order"};
}

}  // namespace cutune::wg
