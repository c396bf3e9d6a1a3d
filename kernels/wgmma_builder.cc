// build_wgmma_gemm: the kernel of wgmma_blocks.h, assembled by a builder with one method per
// stage (loads, warpgroup MMAs, main loop, epilogue) over the state they share.

#include <fmt/format.h>

#include "kernels/schedule_helpers.h"
#include "kernels/wgmma_blocks.h"
#include "kernels/wgmma_tile.h"
#include "src/base/errors.h"
#include "src/ir/hopper_intrinsics.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_mutator.h"
#include "src/ir/ir_operators.h"
#include "src/ir/tma_intrinsics.h"

namespace cutune::wg {

using namespace ir;

namespace {

// The kernel of one configuration. The constructor fixes what every stage shares (shapes, the
// ring's tiles, the shared and local buffers, the tensor maps, the names the stages bind);
// build() assembles the stages: barrier setup, then either every thread's ring (load, wait,
// compute) or a producer warpgroup's loads beside the consumers' loop, then the epilogue.
class WgmmaGemmBuilder {
 public:
  WgmmaGemmBuilder(const WgmmaGemmSpec& spec, const WgmmaParams& p);
  Kernel build();

 private:
  // The epilogue's two halves: `write` runs in the consumer threads; a staged epilogue's
  // copy-out (`copy_out`) runs after a barrier of the whole block, in the consumer threads too.
  // `drain` runs in the consumers after their last tile: the TMA store's final wait.
  struct Epilogue {
    Stmt write, copy_out, drain;
  };

  // Loads.
  Stmt copy_tile(const std::string& prefix, const Buffer& global, const WgmmaTile& tile,
                 const tc::SourceFn& source, const Expr& slot, const Expr& row0,
                 const Expr& col0) const;
  std::string map_for(const Buffer& global, const WgmmaGemmSpec::TmaView& view,
                      const WgmmaTile& tile, bool shared);
  // The rows of A and C: the constant m, or the kernel's scalar M (WgmmaGemmSpec::m_rows).
  Expr rows_m() const { return spec_.m_rows.defined() ? spec_.m_rows : i32(spec_.m); }
  Expr full(const Expr& slot) const { return address_of(mbar_full_, slot); }
  Expr empty(const Expr& slot) const { return address_of(mbar_empty_, slot); }
  Stmt tma_tile(const std::string& prefix, const std::string& map, const WgmmaTile& tile,
                const Expr& slot, const Expr& row0, const Expr& col0, bool shared) const;
  // A consumer's release of ring slot `slot`: to its block's producer, and in a cluster to
  // the peer's, whose multicast copies write into this block's slot too.
  Stmt release(const Expr& slot) const;
  Stmt load_slice(const Expr& k_tile, const Expr& slot, bool issuer = false,
                  const Stmt& before_issue = Stmt()) const;
  Stmt commit() const { return async_ && any_copy_ ? cp_async_commit() : Stmt(); }
  Stmt wait_full(const Expr& kt) const;
  Stmt wait_empty(const Expr& kt) const;

  // Warpgroup MMAs.
  Stmt with_first_descriptors(const Stmt& body) const;
  Stmt compute(const Expr& slot, int pending = 0) const;

  // Main loops.
  Stmt released_loop(std::vector<Stmt> prefix, const Expr& ring) const;
  Stmt each_tile(const Stmt& body) const;
  Stmt persistent_tiles(const Stmt& body) const;
  Stmt piece_write() const;
  Expr ring_position(const Expr& k) const;
  Stmt ring_mainloop() const;
  Stmt consumers(Stmt write, const Stmt& copy_out) const;
  Stmt producer() const;

  Epilogue epilogue() const;
  // The fused epilogue (spec_.epilogue) on the accumulators in registers, before any store
  // path: an undefined Stmt (which Block::make drops) where there is none.
  Stmt apply_epilogue() const;
  // The TMA store's epilogue (tma_store): the tile through the shared C tile and TMA stores.
  Epilogue store_epilogue() const;
  Expr c_tile_offset(const Expr& row, const Expr& col) const;
  Stmt barrier_setup() const;
  Stmt bind(Stmt body) const;

  const WgmmaGemmSpec& spec_;
  const WgmmaParams& p_;
  const bool nn_;
  const DType input_;
  const int threads_, consumers_, strips_, per_strip_;
  const int elems_;  // elements per cp.async copy
  const int s_;      // ring slots
  const int64_t tiles_m_, tiles_n_, k_tiles_;
  const bool tma_a_, tma_b_, any_tma_, any_copy_, async_;
  const bool producer_, pingpong_, pipe_;
  // The planted bug: the lead and releases of a ring whose wgmmas are done at each slice's end.
  const bool early_;
  // All-TMA rings release slots through their empty barriers (every consumer thread arrives
  // after its slice's wgmmas; the issuing thread waits for the phase before refilling), so the
  // loop has no block-wide barrier; a ring with cp.async copies needs the barrier, which also
  // tells that every warpgroup is done with the slot the previous iteration read.
  const bool release_by_barrier_;

  // The TMA store: the shared C tile(s) in C's type, as columns of c_cols_ elements (128 bytes)
  // by the stored rows (block_m), 128-byte swizzled, or two such columns (subtiles_); one per
  // consumer warpgroup with ping-pong. Stored through c_map_ by the elected consumer thread.
  const bool tma_store_;
  const bool subtiles_;
  // Clusters of cs_ blocks (2 or 1): share_a_ (1x2) or share_b_ (2x1) marks the operand whose
  // slice the cluster's blocks share, each loading half of its rows (rank_'s half) by a
  // multicast copy into both.
  const int cs_;
  const bool share_a_, share_b_;
  Expr rank_ = int_var("cta_rank");  // tma_store 2: two columns' buffers, taken in turn
  int c_cols_ = 0;
  std::string c_map_;
  WgmmaTile a_tile_, b_tile_;
  Buffer smem_, acc_, c_stage_;
  int stage_ld_ = 0;  // staged C rows, padded against bank conflicts
  // Ring slot s's "full" barrier is mbar_full[s] (one arrival: the expect_tx; then the copies'
  // bytes), its "empty" one mbar_empty[s] (every consumer thread arrives), with a producer only.
  Buffer mbar_full_, mbar_empty_;
  // Ping-pong: warpgroup w waits on mbar_order[w] for the end of the previous tile's main loop
  // (its 128 threads arrive), so the warpgroups take the tensor cores in the tiles' order.
  Buffer mbar_order_;

  Expr tx_ = int_var("tx"), wg_ = int_var("warpgroup"), warp_ = int_var("warp"),
       g_ = int_var("group"), q_ = int_var("thread_in_group");
  Expr tile_m_ = int_var("tile_m"), tile_n_ = int_var("tile_n");
  Expr first_tile_ = int_var("first_k_tile"), n_tiles_ = int_var("k_tiles");
  // Slice k_outer of the loop.
  Expr ko_ = int_var("k_outer");

  // TMA: one box per layout column of a tile (gemm_wgmma.h), whose image with the swizzle is
  // that column: E = swizzle/2 elements (8 without swizzle) of the view's inner dimension by
  // the tile's rows. The box origin is the slice's (row0, col0) plus the column's E·c.
  int e_cols_ = 0;
  std::vector<TensorMapParam> maps_;
  std::string a_map_, b_map_;
  int64_t slot_tx_bytes_ = 0;  // what one slot's TMA copies bring (its expect_tx)
  // The thread that issues the copies: one lane, by elect.sync, of warp 0, or of the producer
  // warpgroup's first warp (written (tx / 32) % 4 == 0 inside the producer's branch, which the
  // feature analysis, taking conditions as independent, then weighs right). Under `tx == 0`
  // ptxas wraps every TMA copy in a loop over the active lanes' operand values (ELECT ...
  // BRA.U.ANY: 12 such loops in the 128x128x64 kernel without a producer); under elect.sync it
  // issues each copy once. Which lane is elected is unspecified: nothing else may assume it is
  // lane 0. Thread 0 initialises the barriers.
  Expr elected_, producer_elected_, thread0_;

  // The warpgroup's first tile row: each one's share of the rows, or 0 with ping-pong.
  Expr wg_row0_;
  Expr desc_a0_ = Var::make(Type::i64(), "desc_a0"), desc_b0_ = Var::make(Type::i64(), "desc_b0");
  Stmt fence_acc_;  // wgmma_fence_operand on every accumulator register
  Stmt init_;       // every accumulator set to 0
  // Several tiles a block (with a producer): each_tile runs a body for each of the block's
  // tiles, under its tile_m and tile_n; the last blocks may have fewer.
  tc::TileGrid grid_;
  bool several_tiles_ = false;
  // Persistent tiles (with a producer): each_tile walks the tiles by the launched grid; with
  // split_last_wave_ the last wave's tiles come in pieces of K, added into C by atomics.
  bool persistent_ = false, split_last_wave_ = false;
};

WgmmaGemmBuilder::WgmmaGemmBuilder(const WgmmaGemmSpec& spec, const WgmmaParams& p)
    : spec_(spec),
      p_(p),
      nn_(spec.b_mn_major),
      input_(spec.input),
      threads_(p.threads()),
      consumers_(p.consumer_threads()),
      strips_(p.strips()),
      per_strip_(p.acc_per_strip()),
      elems_(p.copy_bytes / 2),
      s_(p.stages),
      tiles_m_(ceil_div(spec.m, p.bm)),
      tiles_n_(ceil_div(spec.n, p.bn)),
      k_tiles_(ceil_div(spec.k, p.bk)),
      tma_a_(p.tma() && spec.a_tma.has_value()),
      tma_b_(p.tma() && spec.b_tma.has_value()),
      any_tma_(tma_a_ || tma_b_),
      any_copy_(!tma_a_ || !tma_b_),
      async_(elems_ > 1),
      producer_(p.producer == 1),
      pingpong_(p.pingpong == 1),
      pipe_(p.mma_pipe == 1),
      early_(pipe_ && spec.hooks.release_in_flight),
      release_by_barrier_(any_copy_),
      tma_store_(p.tma_store >= 1 && p.epilogue == 2),
      subtiles_(tma_store_ && p.tma_store == 2),
      cs_(p.cluster_size()),
      share_a_(p.cluster_n > 1),
      share_b_(p.cluster_m > 1),
      a_tile_{0, p.bm, p.bk, &p},
      b_tile_{nn_ ? WgmmaTile{0, p.bk, p.bn, &p} : WgmmaTile{0, p.bn, p.bk, &p}} {
  CUTUNE_CHECK(!producer_ || (tma_a_ && tma_b_),
               fmt::format("{}: a producer warpgroup needs TMA loads of both operands", spec.name));
  const Type in{input_, 1};
  b_tile_.base = p.stages * a_tile_.stage_elements();
  smem_ = Buffer::make("S", in, MemoryScope::shared,
                       p.stages * (a_tile_.stage_elements() + b_tile_.stage_elements()));
  acc_ = Buffer::make("Acc", Type::f32(), MemoryScope::local, int64_t{strips_} * per_strip_);
  stage_ld_ = p.bn + kStagePad;
  if (tma_store_) {
    CUTUNE_CHECK(any_tma_ && p.split_k == 1,
                 fmt::format("{}: a TMA store needs TMA loads and no split-K", spec.name));
    const Type c_type = spec.c->type;
    c_cols_ = 128 / c_type.element_bytes();
    CUTUNE_CHECK(p.bn % c_cols_ == 0,
                 fmt::format("{}: a TMA store needs whole 128-byte columns", spec.name));
    const int tiles = pingpong_ ? p.warpgroups : 1;
    const int64_t per_tile = subtiles_ ? int64_t{2} * p.bm * c_cols_ : int64_t{p.bm} * p.bn;
    c_stage_ = Buffer::make("C_stage", c_type, MemoryScope::shared, tiles * per_tile);
  } else {
    c_stage_ = Buffer::make("C_stage", Type::f32(), MemoryScope::shared,
                            p.epilogue == 2 ? int64_t{p.bm} * stage_ld_ : 1);
  }
  mbar_full_ = Buffer::make("mbar_full", Type::i64(), MemoryScope::shared, p.stages);
  mbar_empty_ = Buffer::make("mbar_empty", Type::i64(), MemoryScope::shared, p.stages);
  mbar_order_ = Buffer::make("mbar_order", Type::i64(), MemoryScope::shared, p.warpgroups);

  e_cols_ = p.column_elems();
  CUTUNE_CHECK(cs_ == 1 || (producer_ && cs_ == 2 && p.last_wave_split == 0),
               fmt::format("{}: a cluster is 2x1 or 1x2, with a producer warpgroup and no split "
                           "of the last wave",
                           spec.name));
  // A shared slice's half lands at a whole number of the swizzle's 8-row repeats (1024 bytes
  // with the 128-byte swizzle, the copy's alignment), where its layout is the whole box's.
  CUTUNE_CHECK(
      (!share_a_ || a_tile_.rows % 16 == 0) && (!share_b_ || b_tile_.rows % 16 == 0),
      fmt::format("{}: a cluster's shared slice splits into halves of 8-row groups", spec.name));
  a_map_ = tma_a_ ? map_for(spec.a, *spec.a_tma, a_tile_, share_a_) : "";
  b_map_ = tma_b_ ? map_for(spec.b, *spec.b_tma, b_tile_, share_b_) : "";
  if (tma_store_) {
    // C as [m][n] of its type, boxes of one 128-byte column by the tile's rows.
    TensorMapDesc d;
    d.buffer = spec.c->name;
    d.dtype = spec.c->type.dtype;
    d.dims[0] = spec.n;
    d.dims[1] = spec.m;
    d.row_stride_bytes = spec.n * spec.c->type.element_bytes();
    d.box[0] = c_cols_;
    d.box[1] = p.bm;
    d.swizzle = TmaSwizzle::b128;
    maps_.push_back(TensorMapParam{spec.c->name + "_map", d});
    c_map_ = maps_.back().name;
  }
  if (tma_a_) slot_tx_bytes_ += a_tile_.stage_elements() * 2;
  if (tma_b_) slot_tx_bytes_ += b_tile_.stage_elements() * 2;
  Expr warp_in_block = int_var("block_warp");  // warp_uniform(tx / 32), bound with TMA (bind)
  elected_ = eq(warp_in_block, 0) && elect_one();
  producer_elected_ = eq(warp_in_block % 4, 0) && elect_one();
  thread0_ = eq(tx_, 0);

  wg_row0_ = pingpong_ ? i32(0) : wg_ * (p.bm / p.warpgroups);
  Expr ii = int_var("i");
  fence_acc_ = For::make("i", 0, strips_ * per_strip_, ForKind::unrolled,
                         wgmma_fence_operand(address_of(acc_, ii)));
  init_ =
      For::make("i", 0, strips_ * per_strip_, ForKind::unrolled, Store::make(acc_, ii, f32(0.0)));
  const int tiles_per_block = producer_ ? p.tiles_per_block : 1;
  grid_ = {tiles_m_, tiles_n_, k_tiles_, p.split_k, p.raster, threads_, tiles_per_block};
  CUTUNE_CHECK(p.persistent == 0 || (producer_ && p.split_k == 1 && tiles_per_block == 1),
               fmt::format("{}: persistent tiles need a producer, no split-K and one tile a "
                           "block by the knob",
                           spec.name));
  CUTUNE_CHECK(p.last_wave_split == 0 || (p.persistent == 1 && !spec.out16),
               fmt::format("{}: the last wave splits along K only with persistent tiles and "
                           "fp32 C",
                           spec.name));
  persistent_ = p.persistent == 1;
  split_last_wave_ = persistent_ && p.last_wave_split == 1;
  grid_.persistent = persistent_;
  grid_.k_per_tile = split_last_wave_;
  grid_.cluster_m = p.cluster_m;
  grid_.cluster_n = p.cluster_n;
  several_tiles_ = grid_.tiles_per_block > 1 || persistent_;
  if (spec.m_rows.defined()) {
    CUTUNE_CHECK(!several_tiles_, fmt::format("{}: a run-time M needs one tile a block, not "
                                              "persistent tiles",
                                              spec.name));
    grid_.run_tiles_m = (spec.m_rows + (p.bm - 1)) / p.bm;
  }
}

// Copies a [rows][cols] slice, whose (0, 0) is global (row0, col0) of a row-major matrix of
// `ld` columns, into `tile`'s slot, `elems` elements per copy (cp.async with zero-fill).
Stmt WgmmaGemmBuilder::copy_tile(const std::string& prefix, const Buffer& global,
                                 const WgmmaTile& tile, const tc::SourceFn& source,
                                 const Expr& slot, const Expr& row0, const Expr& col0) const {
  const int per_row = tile.cols / elems_, copies = tile.rows * tile.cols / elems_;
  Expr v = int_var(prefix + "_cp") * threads_ + tx_;
  Expr row = v / per_row, col = v % per_row * elems_;
  tc::CopySource src = source(row0, col0, row, col);
  const std::vector<Expr>& ok = src.in_range;
  Expr dst_index = tile.offset(slot, row, col);
  Stmt body;
  if (async_) {
    Expr src_index = ok.empty() ? src.index : select(all_of(ok), src.index, 0);
    Expr src_bytes = ok.empty() ? i32(2 * elems_) : select(all_of(ok), i32(2 * elems_), 0);
    body = cp_async(2 * elems_, address_of(smem_, dst_index), address_of(global, src_index),
                    src_bytes);
  } else {
    Stmt store = Store::make(smem_, dst_index, Load::make(global, src.index));
    body = ok.empty()
               ? store
               : IfThenElse::make(all_of(ok), store,
                                  Store::make(smem_, dst_index, f32_to_storage(input_, f32(0.0))));
  }
  if (copies % threads_ != 0) body = IfThenElse::make(v < copies, body);
  return For::make(prefix + "_cp", 0, int(ceil_div(copies, threads_)), ForKind::unrolled, body);
}

// `shared`: the operand a cluster shares, whose boxes are half the tile's rows.
std::string WgmmaGemmBuilder::map_for(const Buffer& global, const WgmmaGemmSpec::TmaView& view,
                                      const WgmmaTile& tile, bool shared) {
  TensorMapDesc d;
  d.buffer = global->name;
  d.dtype = input_;
  d.dims[0] = view.inner;
  d.dims[1] = view.outer;
  d.row_stride_bytes = view.row_stride_bytes;
  d.box[0] = e_cols_;
  d.box[1] = shared ? tile.rows / 2 : tile.rows;
  d.swizzle = spec_.hooks.wrong_map_swizzle ? TmaSwizzle::none : tma_swizzle(p_.swizzle);
  // A and B are read tile after tile by many blocks: the L2 fetches 256-byte sectors of them
  // at once (a hint; the emulator ignores it).
  d.l2_promotion = TmaL2Promotion::b256;
  maps_.push_back(TensorMapParam{global->name + "_map", d});
  return maps_.back().name;
}

// `shared`: the slice a cluster shares: the block loads rows [rank·h, rank·h + h) of each
// column (h half the tile's rows) into every block of the cluster (mask 0b11), at the same
// offset, completing its bytes on each one's full barrier of the slot.
Stmt WgmmaGemmBuilder::tma_tile(const std::string& prefix, const std::string& map,
                                const WgmmaTile& tile, const Expr& slot, const Expr& row0,
                                const Expr& col0, bool shared) const {
  Expr col = int_var(prefix + "_tma");
  Stmt copy;
  if (!shared) {
    copy = tma_load_2d(address_of(smem_, tile.offset(slot, i32(0), col * e_cols_)),
                       tensor_map_ref(map), full(slot), col0 + col * e_cols_, row0);
  } else {
    const int half = tile.rows / 2;
    // h rows are whole swizzle repeats: the half's image is the box's from row h on.
    Expr at = tile.offset(slot, i32(0), col * e_cols_) + rank_ * i32(half * e_cols_);
    Expr mask = spec_.hooks.wrong_cta_mask ? rank_ + 1 : i32((1 << cs_) - 1);
    copy = tma_load_2d_multicast(address_of(smem_, at), tensor_map_ref(map), full(slot),
                                 col0 + col * e_cols_, row0 + rank_ * half, mask);
  }
  return For::make(prefix + "_tma", 0, tile.cols / e_cols_, ForKind::unrolled, copy);
}

Stmt WgmmaGemmBuilder::release(const Expr& slot) const {
  Stmt local = mbarrier_arrive(empty(slot));
  if (cs_ == 1 || spec_.hooks.skip_remote_arrive) return local;
  return Block::make({local, mbarrier_arrive_cluster(empty(slot), i32(1) - rank_)});
}

// The load stage: global K slice `k_tile` into ring slot `slot`. Operands TMA loads are
// issued by the elected thread after the slot's expect_tx; the others are cp.async copies
// (or element copies) by every thread.
// `issuer`: the caller runs in the elected thread alone, which issues without a test;
// `before_issue` runs in the issuing thread first (the wait for the slot's release).
Stmt WgmmaGemmBuilder::load_slice(const Expr& k_tile, const Expr& slot, bool issuer,
                                  const Stmt& before_issue) const {
  const WgmmaParams& p = p_;
  Expr k0 = k_tile * p.bk;
  Expr a_row0 = tile_m_ * p.bm, a_col0 = k0;
  Expr b_row0 = nn_ ? k0 : tile_n_ * p.bn, b_col0 = nn_ ? tile_n_ * p.bn : k0;
  std::vector<Stmt> copies, issue;
  if (before_issue.defined()) issue.push_back(before_issue);
  if (any_tma_) {
    issue.push_back(
        mbarrier_arrive_expect_tx(full(slot), i32(slot_tx_bytes_ + spec_.hooks.expect_tx_delta)));
  }
  if (tma_a_) {
    issue.push_back(tma_tile("a", a_map_, a_tile_, slot, a_row0, a_col0, share_a_));
  } else {
    copies.push_back(copy_tile("a", spec_.a, a_tile_, spec_.a_source, slot, a_row0, a_col0));
  }
  if (tma_b_) {
    issue.push_back(tma_tile("b", b_map_, b_tile_, slot, b_row0, b_col0, share_b_));
  } else {
    copies.push_back(copy_tile("b", spec_.b, b_tile_, spec_.b_source, slot, b_row0, b_col0));
  }
  if (!issue.empty()) {
    copies.push_back(issuer ? Block::make(issue) : IfThenElse::make(elected_, Block::make(issue)));
  }
  return Block::make(copies);
}

// Slice kt's parity on its slot's full barrier: the slot's fill number mod 2.
Stmt WgmmaGemmBuilder::wait_full(const Expr& kt) const {
  if (!any_tma_ || spec_.hooks.skip_full_wait) return Stmt();
  return mbarrier_wait_parity(full(kt % p_.stages), kt / p_.stages % 2);
}

// Fill kt / stages of the slot waits for the consumers' release of fill kt / stages - 1 (the
// empty barrier's phase of that number); a fresh barrier passes parity 1 at once.
Stmt WgmmaGemmBuilder::wait_empty(const Expr& kt) const {
  return mbarrier_wait_parity(empty(kt % s_), (kt / s_ + 1) % 2);
}

// Each warpgroup makes its first A and B descriptors (slot 0, k-step 0, strip 0) once, before
// its loop; every other one is that plus the start's distance in 16-byte units, which is
// where a descriptor's start address field sits (bits 0-13; shared memory stays below 256
// KiB, so the sum never carries out of it). The descriptors are the same as made afresh, with
// one 64-bit add each instead of the conversion, shifts and masks.
Stmt WgmmaGemmBuilder::with_first_descriptors(const Stmt& body) const {
  Expr b0 = nn_ ? b_tile_.mn_major_descriptor(smem_, i32(0), i32(0))
                : b_tile_.k_major_descriptor(smem_, i32(0), i32(0), i32(0));
  return LetStmt::make("desc_a0", a_tile_.k_major_descriptor(smem_, i32(0), wg_row0_, i32(0)),
                       LetStmt::make("desc_b0", b0, body));
}

// One block_k slice of the warpgroup's products from ring slot `slot`, one commit group;
// then waits until at most `pending` groups are unfinished.
Stmt WgmmaGemmBuilder::compute(const Expr& slot, int pending) const {
  auto step = [](const Expr& first, const Expr& elements) {
    return first + cast(Type::i64(), elements / 8);  // 8 elements: 16 bytes
  };
  Expr kk = int_var("kk"), j = int_var("j");
  // Strip j of warpgroup wg: tile rows wg_row0 + 64·j, a multiple of 8 rows, so the
  // descriptor starts on a row group of the layout.
  Expr desc_a = step(desc_a0_, a_tile_.k_major_step(slot, j * 64, kk));
  Expr desc_b = step(
      desc_b0_, nn_ ? b_tile_.mn_major_step(slot, kk) : b_tile_.k_major_step(slot, i32(0), kk));
  Stmt mma = wgmma_ss(WgmmaShape{p_.bn, input_, false, nn_}, address_of(acc_, j * per_strip_),
                      desc_a, desc_b, i32(1));
  return Block::make({fence_acc_, wgmma_fence(),
                      For::make("kk", 0, p_.bk / 16, ForKind::unrolled,
                                For::make("j", 0, strips_, ForKind::unrolled, mma)),
                      wgmma_commit_group(), wgmma_wait_group(pending), fence_acc_});
}

// A loop iteration's slice `ko` through empty barriers: `prefix` (its wait, a refill), the
// slice's wgmmas, and the release of the slot whose wgmmas are done: its own, or with
// mma_pipe the previous slice's after this one's wait_group 1, the last slot after the
// loop's final wait.
// `ring`: the slice's number in the ring's sequence, ko, or base + ko for a block's later
// tiles (slots and phases run on across a block's tiles).
Stmt WgmmaGemmBuilder::released_loop(std::vector<Stmt> prefix, const Expr& ring) const {
  const int s = s_;
  if (!pipe_) {
    prefix.push_back(compute(ring % s));
    prefix.push_back(release(ring % s));
    return For::make("k_outer", 0, n_tiles_, ForKind::serial, Block::make(prefix));
  }
  prefix.push_back(compute(ring % s, 1));
  prefix.push_back(early_ ? release(ring % s)
                          : IfThenElse::make(ko_ > i32(0), release((ring + (s - 1)) % s)));
  // The last slice's slot: `ring` at ko = n_tiles - 1.
  Expr last_ring = substitute(ring, "k_outer", n_tiles_);
  Stmt last =
      early_ ? Stmt() : IfThenElse::make(n_tiles_ > i32(0), release((last_ring + (s - 1)) % s));
  return Block::make({For::make("k_outer", 0, n_tiles_, ForKind::serial, Block::make(prefix)),
                      wgmma_wait_group(0), fence_acc_, last});
}

Stmt WgmmaGemmBuilder::each_tile(const Stmt& body) const {
  if (persistent_) return persistent_tiles(body);
  // The block's (or its cluster's) tiles: a cluster's blocks take the same cluster tiles.
  Expr tile = int_var("tile");
  Expr unit = cs_ > 1 ? int_var("bx") / cs_ : int_var("bx");
  const int64_t units = grid_.blocks() / cs_;
  return For::make(
      "tile_t", 0, grid_.tiles_per_block, ForKind::serial,
      LetStmt::make("tile", unit + int_var("tile_t") * i32(units),
                    IfThenElse::make(tile < i32(grid_.units()), tc::bind_tile(body, grid_, tile))));
}

// Persistent tiles: of the G = gridDim.x blocks launched, block bx takes tiles bx, bx + G, ...
// (tile_t counts them), in the raster_group order of bind_tile, so that a wave's G tiles are
// consecutive in it: a band of raster_group tile rows, column by column, whose A rows and B
// columns the L2 holds. With last_wave_split the r = tiles % G tiles of a part-empty last wave
// are shared out along K (stream-K): their r·k_tiles slices, in order, are dealt to the G
// blocks in contiguous shares as even as can be (q or q + 1 slices), and each tile a share
// meets is an item of the block, after its whole tiles: the tile's slices within the share.
// An item short of the whole K (`split_piece`) adds into C; a tile whose slices one share
// holds all of is stored as usual. Every block's work follows from bx and G alone: no block
// waits for another, whatever order they run in.
Stmt WgmmaGemmBuilder::persistent_tiles(const Stmt& body) const {
  const Expr tiles = i32(tiles_m_ * tiles_n_), k = i32(k_tiles_);
  const Expr g = int_var("grid_blocks"), bx = int_var("bx"), t = int_var("tile_t");
  const Expr tile = int_var("tile");
  if (cs_ > 1) {
    // A cluster walks cluster tiles as one: cluster c = bx / size of the G / size launched
    // takes cluster tiles c, c + G / size, ... (launch_grid.h launches whole clusters).
    const Expr units = i32(grid_.units()), c = int_var("cluster_index"),
               gc = int_var("grid_clusters");
    Stmt item = LetStmt::make("tile", c + t * gc, tc::bind_tile(body, grid_, tile));
    Stmt loop = For::make("tile_t", 0, (units - c + gc - 1) / gc, ForKind::serial, item);
    loop = LetStmt::make("cluster_index", bx / cs_, loop);
    return LetStmt::make("grid_clusters", grid_blocks() / cs_, loop);
  }
  if (!split_last_wave_) {
    Stmt item = LetStmt::make("tile", bx + t * g, tc::bind_tile(body, grid_, tile));
    return LetStmt::make("grid_blocks", grid_blocks(),
                         For::make("tile_t", 0, (tiles - bx + g - 1) / g, ForKind::serial, item));
  }
  const Expr whole = int_var("whole_rounds"), rest = int_var("rest_tiles");
  const Expr share = int_var("tail_share"), extra = int_var("tail_extra");
  const Expr lo = int_var("share_begin"), hi = int_var("share_end");
  const Expr in_rest = t >= whole;
  // Item t - whole of the share: rest tile lo / k + t - whole, its slices [u0, u1) of the tail.
  const Expr rest_tile = int_var("rest_tile"), u0 = int_var("slice_begin"),
             u1 = int_var("slice_end");
  Stmt item = tc::bind_tile(body, grid_, tile);
  item = LetStmt::make("split_piece", select(in_rest && u1 - u0 < k, i32(1), i32(0)), item);
  // The ring runs on from the whole tiles through the share's slices without a gap. (Never
  // negative: the max, which changes nothing, lets the code generator say so, so that the
  // slot and phase of each slice are plain % and / rather than floor division helpers.)
  item = LetStmt::make("ring_base", max(select(in_rest, whole * k + u0 - lo, t * k), i32(0)),
                       item);
  // An item holds 1 to k slices from a first below k: the min, max and `% k` change nothing;
  // they tell the analyses that cannot see through the share's arithmetic (bounds, the
  // features' loop extents) that the K loops run at most k slices.
  item = LetStmt::make("k_tiles", select(in_rest, max(min(u1 - u0, k), i32(1)), k), item);
  item = LetStmt::make("first_k_tile", select(in_rest, (u0 - rest_tile * k) % k, i32(0)), item);
  item = LetStmt::make("tile", select(in_rest, whole * g + rest_tile, bx + t * g), item);
  item = LetStmt::make("slice_end", min(hi, rest_tile * k + k), item);
  item = LetStmt::make("slice_begin", max(lo, rest_tile * k), item);
  item = LetStmt::make("rest_tile", lo / k + t - whole, item);
  Expr tail_items = select(hi > lo, (hi - 1) / k - lo / k + 1, i32(0));
  Stmt loop = For::make("tile_t", 0, whole + tail_items, ForKind::serial, item);
  loop = LetStmt::make("share_end", lo + share + select(bx < extra, i32(1), i32(0)), loop);
  loop = LetStmt::make("share_begin", bx * share + min(bx, extra), loop);
  // r·k slices over G blocks: q each, and one more for the first r·k % G.
  loop = LetStmt::make("tail_extra", rest * k % g, loop);
  loop = LetStmt::make("tail_share", rest * k / g, loop);
  loop = LetStmt::make("rest_tiles", tiles - whole * g, loop);
  loop = LetStmt::make("whole_rounds", tiles / g, loop);
  return LetStmt::make("grid_blocks", grid_blocks(), loop);
}

// A last-wave piece's epilogue: every accumulator added into C by a scalar atomic (the tile's
// other pieces add theirs; fp32 C starts at zero), in the fragment layout of epilogue().
Stmt WgmmaGemmBuilder::piece_write() const {
  Expr j = int_var("j"), pp = int_var("p"), e = int_var("e");
  Expr grow = tile_m_ * p_.bm + wg_row0_ + j * 64 + warp_ * 16 + g_ + pp % 2 * 8;
  Expr gcol = tile_n_ * p_.bn + pp / 2 * 8 + q_ * 2 + e;
  Stmt add = atomic_add(spec_.c, grow * i32(spec_.n) + gcol,
                        Load::make(acc_, j * per_strip_ + pp * 2 + e));
  Stmt write = For::make(
      "j", 0, strips_, ForKind::unrolled,
      For::make("p", 0, per_strip_ / 2, ForKind::unrolled,
                For::make("e", 0, 2, ForKind::unrolled,
                          IfThenElse::make(grow < rows_m() && gcol < i32(spec_.n), add))));
  return spec_.epilogue.empty() ? write : Block::make({apply_epilogue(), write});
}

// Register 2·pp + e of strip j is element (row, col) of the tile as in epilogue(); the store
// paths after it (scalar, pairs, staged, TMA, atomics) take the rewritten registers unchanged.
Stmt WgmmaGemmBuilder::apply_epilogue() const {
  if (spec_.epilogue.empty()) return Stmt();
  Expr j = int_var("j"), pp = int_var("p"), e = int_var("e");
  Expr grow = tile_m_ * p_.bm + wg_row0_ + j * 64 + warp_ * 16 + g_ + pp % 2 * 8;
  Expr gcol = tile_n_ * p_.bn + pp / 2 * 8 + q_ * 2 + e;
  return For::make(
      "j", 0, strips_, ForKind::unrolled,
      For::make("p", 0, per_strip_ / 2, ForKind::unrolled,
                For::make("e", 0, 2, ForKind::unrolled,
                          spec_.epilogue.in_place(acc_, j * per_strip_ + pp * 2 + e, grow, gcol))));
}

// Slice k of the block's tile, as a number in the ring's sequence: with several tiles a block,
// both sides run the same sequence of tiles, and slice k of tile t is number t·k_tiles + k
// (with last_wave_split, ring_base + k: the slices of the items before it).
Expr WgmmaGemmBuilder::ring_position(const Expr& k) const {
  Expr base = grid_.k_per_tile ? int_var("ring_base")
              : several_tiles_ ? int_var("tile_t") * n_tiles_
                               : Expr();
  return base.defined() ? base + k : k;
}

// Without a producer: the ring, `lead` slices in flight before the loop; each iteration waits
// for its slice (its cp.async group, or its full barrier's phase), refills the slot whose
// wgmmas are done once it is released, and computes. Without mma_pipe that is the slot the
// previous iteration read (lead = stages - 1); with it, a slice's wgmmas stay in flight until
// the next slice's wait_group 1, so the refill takes the slot read two iterations before
// (lead = stages - 2) and the loop ends with a wait for all.
Stmt WgmmaGemmBuilder::ring_mainloop() const {
  const int s = s_;
  const int lead = pipe_ && !early_ ? s - 2 : s - 1;
  std::vector<Stmt> prologue;
  for (int st = 0; st < lead; ++st) {
    prologue.push_back(IfThenElse::make(i32(st) < n_tiles_, load_slice(first_tile_ + st, st)));
    prologue.push_back(commit());
  }
  Expr next = ko_ + lead;
  Stmt loop, drain;
  if (release_by_barrier_) {
    // The barrier also tells that every warpgroup passed the previous iteration's wait.
    loop = For::make(
        "k_outer", 0, n_tiles_, ForKind::serial,
        Block::make({async_ ? cp_async_wait(lead - 1) : Stmt(), wait_full(ko_), fence_proxy_async(),
                     Sync::make(),
                     IfThenElse::make(next < n_tiles_, load_slice(first_tile_ + next, next % s)),
                     commit(), compute(ko_ % s, pipe_ ? 1 : 0)}));
    if (pipe_) drain = Block::make({wgmma_wait_group(0), fence_acc_});
  } else {
    Stmt refill = IfThenElse::make(
        next < n_tiles_, load_slice(first_tile_ + next, next % s, false, wait_empty(next)));
    loop = released_loop({wait_full(ko_), refill}, ko_);
  }
  return Block::make(
      {init_, Block::make(prologue), with_first_descriptors(Block::make({loop, drain}))});
}

// Warp specialisation, the consumers' side: each waits on the full barrier, computes and
// releases; then `write`, the first half of the epilogue. With several tiles a block they run
// the loop and the epilogue once per tile.
Stmt WgmmaGemmBuilder::consumers(Stmt write, const Stmt& copy_out) const {
  Stmt consume = released_loop({wait_full(ring_position(ko_))}, ring_position(ko_));
  Stmt mainloop;
  if (several_tiles_) {
    CUTUNE_CHECK(!copy_out.defined(), "several tiles a block store unstaged");
    if (split_last_wave_ && !spec_.hooks.store_pieces) {
      write = IfThenElse::make(int_var("split_piece") > i32(0), piece_write(), write);
    }
    Stmt tile_body = Block::make({init_, consume, write});
    if (pingpong_) {
      // The block's tile t is warpgroup t % W's. Its main loop starts once tile t - 1's has
      // ended (phase (t - 1) / W of mbar_order[w]; the first tile waits for none), and its end
      // lets tile t + 1's owner start, before this warpgroup's epilogue. Beyond the order of
      // the tensor cores, this keeps every wait on a ring slot's full barrier at most one
      // phase ahead of the slot: the owner of tile t + 1, which skips tile t's slices, waits
      // for its first slices only once tile t's have all arrived.
      Expr t = int_var("tile_t");
      const int wgs = p_.warpgroups;
      auto order = [&](const Expr& w) { return address_of(mbar_order_, w); };
      Stmt wait_turn = spec_.hooks.skip_turn_wait
                           ? Stmt()
                           : IfThenElse::make(t > i32(0), mbarrier_wait_parity(order(t % wgs),
                                                                               (t - 1) / wgs % 2));
      Stmt pass_turn = mbarrier_arrive(order((t + 1) % wgs));
      // t % W == w, written (t + W - w) % W == 0 so that the feature analysis, which takes
      // a comparison's operands as independent, weighs it 1/W.
      tile_body = IfThenElse::make(eq((t + i32(wgs) - wg_) % wgs, 0),
                                   Block::make({wait_turn, init_, consume, pass_turn, write}));
    }
    mainloop = Block::make(
        {setmaxnreg(true, kConsumerRegisters), with_first_descriptors(each_tile(tile_body))});
    write = Stmt();
  } else {
    mainloop =
        Block::make({setmaxnreg(true, kConsumerRegisters), init_, with_first_descriptors(consume)});
  }
  return Block::make({mainloop, write});
}

// Warp specialisation, the producer's side: its elected thread fills slot k % stages once the
// consumers have released its previous fill, for each of the block's tiles.
Stmt WgmmaGemmBuilder::producer() const {
  Expr kl = int_var("k_load");
  Stmt produce = For::make(
      "k_load", 0, n_tiles_, ForKind::serial,
      load_slice(first_tile_ + kl, ring_position(kl) % s_, true, wait_empty(ring_position(kl))));
  if (several_tiles_) produce = each_tile(produce);
  return Block::make(
      {setmaxnreg(false, kProducerRegisters), IfThenElse::make(producer_elected_, produce)});
}

// Register 2·pp (+1) of strip j holds row 16·warp + group + 8·(pp % 2) of the strip and
// columns 8·(pp / 2) + 2·thread_in_group (+1) (the ISA's D fragment layout).
WgmmaGemmBuilder::Epilogue WgmmaGemmBuilder::epilogue() const {
  const WgmmaParams& p = p_;
  const int64_t n = spec_.n;
  const Expr m = rows_m();
  const bool out16 = spec_.out16;
  const Buffer& c = spec_.c;
  Expr j = int_var("j"), pp = int_var("p"), e = int_var("e");
  Expr local_row = wg_row0_ + j * 64 + warp_ * 16 + g_ + pp % 2 * 8;
  Expr local_col = pp / 2 * 8 + q_ * 2;
  Expr grow = tile_m_ * p.bm + local_row, gcol = tile_n_ * p.bn + local_col;
  Expr reg = j * per_strip_ + pp * 2;
  Epilogue out;
  auto per_pair = [&](const Stmt& st) {
    return For::make("j", 0, strips_, ForKind::unrolled,
                     For::make("p", 0, per_strip_ / 2, ForKind::unrolled, st));
  };
  if (tma_store_) {
    out = store_epilogue();
  } else if (p.epilogue == 0) {
    Expr index = grow * i32(n) + gcol + e;
    Expr v = Load::make(acc_, reg + e);
    Stmt store = p.split_k > 1 ? atomic_add(c, index, v)
                               : Store::make(c, index, out16 ? f32_to_storage(input_, v) : v);
    out.write = per_pair(For::make("e", 0, 2, ForKind::unrolled,
                                   IfThenElse::make(grow < m && gcol + e < i32(n), store)));
  } else if (p.epilogue == 1) {
    Expr value = out16 ? pack_x2(input_, Load::make(acc_, reg), Load::make(acc_, reg + 1))
                       : Load::make(acc_, reg, 2);
    out.write = per_pair(
        IfThenElse::make(grow < m && gcol < i32(n), Store::make(c, grow * i32(n) + gcol, value)));
  } else {
    out.write = per_pair(
        Store::make(c_stage_, local_row * stage_ld_ + local_col, Load::make(acc_, reg, 2)));
    const int per_row = p.bn / 4, copies = p.bm * per_row;
    Expr v = int_var("c_cp") * consumers_ + tx_;
    Expr row = v / per_row, col = v % per_row * 4;
    Expr out_row = tile_m_ * p.bm + row, out_col = tile_n_ * p.bn + col;
    Expr at = row * stage_ld_ + col;
    Expr index = out_row * i32(n) + out_col;
    Stmt store;
    if (out16) {
      store = Block::make(
          {Store::make(c, index,
                       pack_x2(input_, Load::make(c_stage_, at), Load::make(c_stage_, at + 1))),
           Store::make(
               c, index + 2,
               pack_x2(input_, Load::make(c_stage_, at + 2), Load::make(c_stage_, at + 3)))});
    } else {
      store = Store::make(c, index, Load::make(c_stage_, at, 4));
    }
    Stmt guarded = IfThenElse::make(out_row < m && out_col < i32(n), store);
    if (copies % consumers_ != 0) guarded = IfThenElse::make(v < copies, guarded);
    out.copy_out =
        For::make("c_cp", 0, int(ceil_div(copies, consumers_)), ForKind::unrolled, guarded);
  }
  if (!spec_.epilogue.empty()) out.write = Block::make({apply_epilogue(), out.write});
  return out;
}

// Element (row, col) of the tile in the shared C tile: column col / c_cols_ of the layout,
// whose rows are 128 bytes, the 16-byte chunk XORed with row % 8 (the 128-byte swizzle, which
// the map's boxes undo). A quad of threads writes a row's 16 or 32 bytes, the 8 rows of a
// warp's fragment land on 8 different chunks: no bank conflict beyond the access's size.
Expr WgmmaGemmBuilder::c_tile_offset(const Expr& row, const Expr& col) const {
  const int per_chunk = c_cols_ / 8;  // elements per 16 bytes
  Expr column = col / c_cols_, within = col % c_cols_;
  Expr chunk = xor_bits(within / per_chunk, row % 8, 3);
  return column * (p_.bm * c_cols_) + row * c_cols_ + chunk * per_chunk + within % per_chunk;
}

// The TMA store: each consumer writes its accumulators into the shared C buffer (16-bit C by
// stmatrix, fp32 by 8-byte st.shared), fences them for the async proxy and meets the others
// at a named barrier (the tile's consumers only: all of them, or with ping-pong the owning
// warpgroup, each with its own buffer and barrier); then the elected thread of their first
// warp stores the buffer's columns and commits them. Before the writes that thread waits until
// its earlier stores have read the buffer (wait_group.read), before a barrier that lets the
// consumers write it again. With the whole tile (tma_store 1) the store overlaps the next
// tile's main loop; with two columns' buffers (2) the tile goes out a column at a time, each
// column's store overlapping the next column's writes (wait_group.read 1), the last ones the
// next main loop. The final wait is the drain, after the last tile. Bulk async-groups are per
// thread: the waits must run in the thread that committed, which elect.sync guarantees (the
// PTX ISA: the same leader for the same member mask every time; the emulator always elects
// lane 31). The named barrier leaves the producer out: it is already loading the next tile's
// slices.
WgmmaGemmBuilder::Epilogue WgmmaGemmBuilder::store_epilogue() const {
  const WgmmaParams& p = p_;
  // With ping-pong, warpgroup w's buffer is the w-th, and its barrier id 1 + w.
  const int64_t buffer = subtiles_ ? int64_t{2} * p.bm * c_cols_ : int64_t{p.bm} * p.bn;
  Expr base = pingpong_ ? wg_ * i32(buffer) : i32(0);
  Expr id = pingpong_ ? wg_ + 1 : i32(1);
  const int count = pingpong_ ? 128 : consumers_;
  Expr elected = pingpong_ ? producer_elected_ : elected_;
  Stmt meet = named_barrier_sync(id, count);
  const int columns = p.bn / c_cols_, blocks = c_cols_ / 8;  // n8 blocks a column

  // The fragments of the tile's columns first / blocks .. (n8 blocks first .. first + n - 1),
  // column `shift` of them at `at0`.
  auto writes = [&](const Expr& first, int n, const Expr& at0, const Expr& shift) {
    Expr j = int_var("j"), pv = int_var("p");
    if (spec_.out16) {
      // stmatrix.x4: registers 8u..8u+7 of strip j are four 8x8 matrices, rows 0-7 and 8-15
      // of the warp's 16 by columns 16u..16u+7, then 16u+8..16u+15 (the ISA's D layout is
      // the m8n8 matrices'); lane 8m + i gives row i of matrix m, whose 16 bytes are one
      // swizzled chunk. One instruction for four 32-bit stores.
      Expr lane = tx_ % 32, u = first / 2 + pv;
      Expr row = wg_row0_ + j * 64 + warp_ * 16 + lane / 8 % 2 * 8 + lane % 8;
      Expr col = u * 16 + lane / 16 * 8 - shift;
      std::vector<Expr> words;
      for (int m = 0; m < 4; ++m) {
        Expr r = j * per_strip_ + u * 8 + 2 * m;
        words.push_back(pack_x2(input_, Load::make(acc_, r), Load::make(acc_, r + 1)));
      }
      return For::make(
          "j", 0, strips_, ForKind::unrolled,
          For::make("p", 0, n / 2, ForKind::unrolled,
                    stmatrix_x4(address_of(c_stage_, at0 + c_tile_offset(row, col)), words)));
    }
    // Register pair pp of strip j: row group + 8 (pp % 2) of the warp's 16, columns
    // 8 (pp / 2) + 2 thread_in_group (+1); one 8-byte store.
    Expr pp = first * 2 + pv;
    Expr row = wg_row0_ + j * 64 + warp_ * 16 + g_ + pp % 2 * 8;
    Expr col = pp / 2 * 8 + q_ * 2 - shift;
    Expr reg = j * per_strip_ + pp * 2;
    return For::make("j", 0, strips_, ForKind::unrolled,
                     For::make("p", 0, 2 * n, ForKind::unrolled,
                               Store::make(c_stage_, at0 + c_tile_offset(row, col),
                                           Load::make(acc_, reg, 2))));
  };
  auto store = [&](const Expr& column, const Expr& from) {
    return tma_store_2d(tensor_map_ref(c_map_), address_of(c_stage_, from),
                        tile_n_ * p.bn + column * c_cols_, tile_m_ * p.bm);
  };
  // One round: the wait for the buffer (none of the thread's store groups but the `pending`
  // most recent still reads), the barrier that lets the consumers write it (always, a no-op
  // wait for a block's first: a block that walks several tiles, however its walk is bound,
  // never overwrites a buffer in flight), the writes, the fence, the barrier, the store.
  auto round = [&](const Stmt& wait, const Stmt& write, const Stmt& issue) {
    std::vector<Stmt> out;
    if (!spec_.hooks.skip_store_read_wait) out.push_back(IfThenElse::make(elected, wait));
    out.push_back(meet);
    out.push_back(write);
    if (!spec_.hooks.skip_store_fence) out.push_back(fence_proxy_async());
    if (!spec_.hooks.skip_store_barrier) out.push_back(meet);
    out.push_back(IfThenElse::make(elected, Block::make({issue, bulk_commit_group()})));
    return Block::make(out);
  };
  Expr col = int_var("c_cp");
  Epilogue out;
  if (subtiles_) {
    // Column c through buffer c % 2, while the store of column c - 1 may still read the
    // other. With an odd number of columns a tile's first column takes the buffer of the
    // previous tile's last: it waits for every store.
    Expr at0 = base + col % 2 * (p.bm * c_cols_);
    Stmt wait = columns % 2 == 0 ? bulk_wait_group_read(1)
                                 : IfThenElse::make(eq(col, 0), bulk_wait_group_read(0),
                                                    bulk_wait_group_read(1));
    out.write = For::make("c_cp", 0, columns, ForKind::unrolled,
                          round(wait, writes(col * blocks, blocks, at0, col * c_cols_),
                                store(col, at0)));
  } else {
    Stmt issue = For::make("c_cp", 0, columns, ForKind::unrolled,
                           store(col, base + col * (p.bm * c_cols_)));
    out.write = round(bulk_wait_group_read(0), writes(i32(0), p.bn / 8, base, i32(0)), issue);
  }
  out.drain = IfThenElse::make(elected, bulk_wait_group());
  return out;
}

// Barriers are initialised, and made visible to the TMA unit, before anyone uses them.
Stmt WgmmaGemmBuilder::barrier_setup() const {
  std::vector<Stmt> setup;
  for (int st = 0; st < s_; ++st) {
    setup.push_back(mbarrier_init(full(i32(st)), i32(1)));
    // Every consumer thread of the slice's warpgroups releases it: all, or the tile's owner.
    const int releasers = pingpong_ ? 128 : consumers_;
    // In a cluster the peer's consumers release the slot too: its copies land in it.
    if (!release_by_barrier_) {
      setup.push_back(mbarrier_init(empty(i32(st)), i32(releasers * cs_)));
    }
  }
  for (int w = 0; pingpong_ && w < p_.warpgroups; ++w) {
    setup.push_back(mbarrier_init(address_of(mbar_order_, i32(w)), i32(128)));
  }
  for (const TensorMapParam& map : maps_) {
    setup.push_back(prefetch_tensormap(tensor_map_ref(map.name)));
  }
  setup.push_back(fence_proxy_async());
  // The inits made visible to the cluster's other blocks (with the cluster barrier after).
  if (cs_ > 1) setup.push_back(fence_mbarrier_init());
  return Block::make(setup);
}

// `body` with its buffers, the thread's position in its warp and warpgroup, and the grid.
Stmt WgmmaGemmBuilder::bind(Stmt body) const {
  body = Allocate::make(acc_, body);
  body = Allocate::make(c_stage_, body);
  if (!release_by_barrier_) body = Allocate::make(mbar_empty_, body);
  if (pingpong_) body = Allocate::make(mbar_order_, body);
  if (any_tma_) body = Allocate::make(mbar_full_, body);
  body = Allocate::make(smem_, body);
  Expr lane = tx_ % 32;
  body = LetStmt::make("thread_in_group", lane % 4, body);
  body = LetStmt::make("group", lane / 4, body);
  body = LetStmt::make("warp", tx_ % 128 / 32, body);
  // Broadcast, so that the compiler keeps the warpgroup index and the descriptors made from it
  // in uniform registers (as it cannot tell threadIdx.x / 128 is the same in every lane).
  body = LetStmt::make("warpgroup", warp_uniform(tx_ / 128), body);
  if (any_tma_) body = LetStmt::make("block_warp", warp_uniform(tx_ / 32), body);
  return tc::bind_tile_grid(body, grid_);
}

Kernel WgmmaGemmBuilder::build() {
  const Epilogue epi = epilogue();
  std::vector<Stmt> parts;
  // In a cluster, no block may use a peer's barriers before the peer initialised them: a
  // cluster barrier (which is a block barrier too) after the inits.
  const bool cluster_sync = cs_ > 1 && !spec_.hooks.skip_cluster_init_barrier;
  if (any_tma_) {
    parts.push_back(IfThenElse::make(thread0_, barrier_setup()));
    parts.push_back(cluster_sync ? Block::make({cluster_arrive(), cluster_wait()}) : Sync::make());
  }
  if (!producer_) {
    parts.push_back(ring_mainloop());
    parts.push_back(epi.write);
    if (epi.copy_out.defined()) parts.push_back(Block::make({Sync::make(), epi.copy_out}));
    parts.push_back(epi.drain);
  } else {
    // The branches are uniform across each warpgroup, as wgmma and setmaxnreg need.
    Expr is_consumer = wg_ < i32(p_.warpgroups);
    parts.push_back(IfThenElse::make(
        is_consumer, Block::make({consumers(epi.write, epi.copy_out), epi.drain}), producer()));
    if (epi.copy_out.defined()) {
      parts.push_back(Sync::make());
      parts.push_back(IfThenElse::make(is_consumer, epi.copy_out));
    }
  }

  // And none exits while a peer may still write into it (its multicast copies, its
  // consumers' releases).
  if (cs_ > 1) parts.push_back(Block::make({cluster_arrive(), cluster_wait()}));

  Kernel kernel;
  kernel.name = spec_.name;
  kernel.cluster_x = cs_;
  kernel.buffers = spec_.parameters;
  kernel.scalars = spec_.epilogue.scalars();
  kernel.body = bind(Block::make(parts));
  kernel.tensor_maps = std::move(maps_);
  if (spec_.m_rows.defined()) kernel.scalars = {spec_.m_rows};
  // setmaxnreg needs the register count at entry fixed: __launch_bounds__(threads, 1).
  if (producer_) kernel.min_blocks = 1;
  if (persistent_) kernel.persistent_blocks_per_sm = kPersistentBlocksPerSm;
  return kernel;
}

}  // namespace

Kernel build_wgmma_gemm(const WgmmaGemmSpec& spec, const WgmmaParams& p) {
  return WgmmaGemmBuilder(spec, p).build();
}

std::vector<std::string> wgmma_loop_names() {
  return {"bx", "kz", "tx", "k_outer", "kk",     "j",     "a_cp",  "b_cp",
          "i",  "p",  "e",  "c_cp",    "k_load", "a_tma", "b_tma", "tile_t"};
}

std::vector<std::string> wgmma_local_buffer_names() {
  return {"S", "C_stage", "Acc", "mbar_full", "mbar_empty", "mbar_order"};
}

}  // namespace cutune::wg
