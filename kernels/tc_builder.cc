// build_tc_gemm: the kernel of tc_blocks.h, assembled by a builder with one
// method per stage (slice loads, fragment loads, mma, the pipelined main loop,
// epilogue) over the state they share.

#include "kernels/schedule_helpers.h"
#include "kernels/tc_blocks.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"

namespace cutune::tc {

using namespace ir;

namespace {

// The kernel of one configuration. The constructor fixes what every stage
// shares (shapes, the ring's tiles, the fragment and accumulator buffers, the
// names the stages bind); build() assembles the stages.
class TcGemmBuilder {
public:
  TcGemmBuilder(const TcGemmSpec &spec, const TcParams &p);
  TcGemmBuilder(const TcGemmBuilder &) =
      delete; // the TileCopy members point at the tiles
  TcGemmBuilder &operator=(const TcGemmBuilder &) = delete;
  Kernel build() const;

private:
  Stmt load_slice(const Expr &k_tile, const Expr &stage) const;
  Stmt commit() const { return async_ ? cp_async_commit() : Stmt(); }
  Stmt load_fragments(const Expr &stage, const Expr &k16, int buf) const;
  Stmt multiply(int buf) const;
  Stmt wait_and_sync() const;
  Stmt advance(int slot) const;
  Stmt main_loop() const;
  Stmt epilogue() const;
  Stmt bind(Stmt body) const;

  const TcGemmSpec &spec_;
  const TcParams &p_;
  const bool nn_;
  const DType input_;
  const int threads_, mi_, ni_;
  const bool async_;
  const int64_t tiles_m_, tiles_n_, k_tiles_;

  SmemTile a_tile_, b_tile_;
  Buffer acc_, a_frag_, b_frag_, ring_;

  Expr tx_ = int_var("tx"), lane_ = int_var("lane"), g_ = int_var("group"),
       tig_ = int_var("thread_in_group");
  Expr warp_row_ = int_var("warp_row"), warp_col_ = int_var("warp_col");
  Expr tile_m_ = int_var("tile_m"), tile_n_ = int_var("tile_n");
  Expr first_tile_ = int_var("first_k_tile"), n_tiles_ = int_var("k_tiles");

  TileCopy a_copy_, b_copy_;
  // Fragment registers of one buffer (0 or 1: the fragments are double-buffered
  // so that the loads of step k+1 are in flight while step k multiplies).
  const int a_frag_len_, b_frag_len_;
  // The ring positions are running indices (`stage_ring`: read slot, write
  // slot), advanced by a compare instead of a modulo.
  Expr read_stage_, write_stage_;
};

TcGemmBuilder::TcGemmBuilder(const TcGemmSpec &spec, const TcParams &p)
    : spec_(spec), p_(p), nn_(spec.b_k_major), input_(spec.input),
      threads_(p.threads()), mi_(p.mi()), ni_(p.ni()),
      async_(spec.a.elems > 1 || spec.b.elems > 1),
      tiles_m_(ceil_div(spec.m, p.bm)), tiles_n_(ceil_div(spec.n, p.bn)),
      k_tiles_(ceil_div(spec.k, p.bk)), a_tile_{Buffer(), p.bm, p.bk,
                                                p.smem_layout},
      b_tile_{nn_ ? SmemTile{Buffer(), p.bk, p.bn, p.smem_layout}
                  : SmemTile{Buffer(), p.bn, p.bk, p.smem_layout}},
      a_copy_{"a",      spec.a.global, &a_tile_, spec.a.elems,
              threads_, spec.a.source, input_},
      b_copy_{"b",      spec.b.global, &b_tile_, spec.b.elems,
              threads_, spec.b.source, input_},
      a_frag_len_(mi_ * 4), b_frag_len_(ni_ * 2) {
  const Type in{input_, 1};
  a_tile_.buffer = Buffer::make("A_shared", in, MemoryScope::shared,
                                p.stages * a_tile_.stage_elements());
  b_tile_.buffer = Buffer::make("B_shared", in, MemoryScope::shared,
                                p.stages * b_tile_.stage_elements());
  acc_ = Buffer::make("C_frag", Type::f32(), MemoryScope::local,
                      int64_t{mi_} * ni_ * 4);
  a_frag_ = Buffer::make("A_frag", Type::u32(), MemoryScope::local,
                         int64_t{mi_} * 4 * 2);
  b_frag_ = Buffer::make("B_frag", Type::u32(), MemoryScope::local,
                         int64_t{ni_} * 2 * 2);
  ring_ = Buffer::make("stage_ring", Type::i32(), MemoryScope::local, 2);
  read_stage_ = Load::make(ring_, 0);
  write_stage_ = Load::make(ring_, 1);
}

// Issues the copies of global K slice `k_tile` into ring slot `stage`.
Stmt TcGemmBuilder::load_slice(const Expr &k_tile, const Expr &stage) const {
  Expr k0 = k_tile * p_.bk;
  Stmt la = a_copy_.copy(tx_, stage, tile_m_ * p_.bm, k0);
  Stmt lb = nn_ ? b_copy_.copy(tx_, stage, k0, tile_n_ * p_.bn)
                : b_copy_.copy(tx_, stage, tile_n_ * p_.bn, k0);
  return Block::make({la, lb});
}

// The fragments of k16 step `k16` (a multiple of 16) of ring slot `stage` into
// fragment buffer `buf`.
Stmt TcGemmBuilder::load_fragments(const Expr &stage, const Expr &k16,
                                   int buf) const {
  const int mi = mi_, ni = ni_;
  const Expr &lane = lane_;
  const SmemTile &a_tile = a_tile_;
  const SmemTile &b_tile = b_tile_;
  Expr i = int_var("i"), j = int_var("j"), jp = int_var("jp"), r = int_var("r");
  Expr wrow0 = warp_row_ * p_.wm, wcol0 = warp_col_ * p_.wn;
  const int a0 = buf * a_frag_len_, b0 = buf * b_frag_len_;
  Stmt load_a, load_b;
  // B element (k, n) of the slice, wherever the layout keeps it.
  auto b_at = [&](const Expr &kx, const Expr &nx) {
    return nn_ ? Load::make(b_tile.buffer, b_tile.offset(stage, kx, nx))
               : Load::make(b_tile.buffer, b_tile.offset(stage, nx, kx));
  };
  if (p_.ldmatrix) {
    // Matrix q = lane/8 of the x4: rows (q%2)*8.., k (q/2)*8.. (PTX a0..a3
    // order).
    load_a = For::make(
        "i", 0, mi, ForKind::unrolled,
        ldmatrix(4, false, address_of(a_frag_, a0 + i * 4),
                 address_of(a_tile.buffer,
                            a_tile.offset(stage, wrow0 + i * 16 + lane % 16,
                                          k16 + lane / 16 * 8))));
    // An x4 covers two n8 tiles: matrices (n0, k0), (n0, k8), (n8, k0), (n8,
    // k8), i.e. b0, b1 of tile 2jp, then of tile 2jp+1. An odd last tile takes
    // an x2.
    auto b_address = [&](const Expr &n_base, const Expr &n_half) {
      Expr kx = k16 + lane / 8 % 2 * 8;
      if (nn_) {
        return address_of(b_tile.buffer, b_tile.offset(stage, kx + lane % 8,
                                                       n_base + n_half * 8));
      }
      return address_of(
          b_tile.buffer,
          b_tile.offset(stage, n_base + n_half * 8 + lane % 8, kx));
    };
    std::vector<Stmt> bs;
    if (ni >= 2) {
      bs.push_back(For::make("jp", 0, ni / 2, ForKind::unrolled,
                             ldmatrix(4, nn_, address_of(b_frag_, b0 + jp * 4),
                                      b_address(wcol0 + jp * 16, lane / 16))));
    }
    if (ni % 2) {
      bs.push_back(ldmatrix(2, nn_, address_of(b_frag_, b0 + (ni - 1) * 2),
                            b_address(wcol0 + (ni - 1) * 8, 0)));
    }
    load_b = Block::make(bs);
  } else {
    // a_r holds rows group + (r%2)*8, k 2*tig + (r/2)*8 and the next k.
    Expr row = wrow0 + i * 16 + g_ + r % 2 * 8;
    Expr col = k16 + tig_ * 2 + r / 2 * 8;
    load_a = For::make(
        "i", 0, mi, ForKind::unrolled,
        For::make(
            "r", 0, 4, ForKind::unrolled,
            Store::make(
                a_frag_, a0 + i * 4 + r,
                pack_b16x2(
                    Load::make(a_tile.buffer, a_tile.offset(stage, row, col)),
                    Load::make(a_tile.buffer,
                               a_tile.offset(stage, row, col + 1))))));
    // b_r holds k 2*tig + r*8 and the next k, column group.
    Expr kx = k16 + tig_ * 2 + r * 8;
    Expr nx = wcol0 + j * 8 + g_;
    load_b = For::make(
        "j", 0, ni, ForKind::unrolled,
        For::make("r", 0, 2, ForKind::unrolled,
                  Store::make(b_frag_, b0 + j * 2 + r,
                              pack_b16x2(b_at(kx, nx), b_at(kx + 1, nx)))));
  }
  return Block::make({load_a, load_b});
}

// The warp's products of the fragments in buffer `buf`.
Stmt TcGemmBuilder::multiply(int buf) const {
  Expr i = int_var("i"), j = int_var("j");
  Expr slot = (i * ni_ + j) * 4;
  return For::make(
      "i", 0, mi_, ForKind::unrolled,
      For::make("j", 0, ni_, ForKind::unrolled,
                mma_m16n8k16(input_, address_of(acc_, slot),
                             address_of(a_frag_, buf * a_frag_len_ + i * 4),
                             address_of(b_frag_, buf * b_frag_len_ + j * 2),
                             address_of(acc_, slot))));
}

Stmt TcGemmBuilder::wait_and_sync() const {
  return Block::make(
      {async_ ? cp_async_wait(p_.stages - 2) : Stmt(), Sync::make()});
}

Stmt TcGemmBuilder::advance(int slot) const {
  Expr v = Load::make(ring_, slot);
  return Store::make(ring_, slot,
                     select(eq(v, i32(p_.stages - 1)), i32(0), v + 1));
}

// The cp.async ring, software-pipelined at two levels. Slices 0..stages-2 are
// in flight before the loop. Iteration k_outer refills the slot iteration
// k_outer-1 read, multiplies the k16 steps of its slice with each step's
// fragments loaded one step ahead, and, after the last step's mma are issued,
// waits for slice k_outer+1, synchronises and loads that slice's first
// fragments: the tensor cores work across the barrier. Every read of a slot
// comes before the barrier of the iteration that reads it, and its refill after
// that barrier.
Stmt TcGemmBuilder::main_loop() const {
  const int s = p_.stages;
  const int steps = p_.bk / 16;
  std::vector<Stmt> prologue;
  for (int st = 0; st < s - 1; ++st) {
    prologue.push_back(
        IfThenElse::make(i32(st) < n_tiles_, load_slice(first_tile_ + st, st)));
    prologue.push_back(commit());
  }
  prologue.push_back(Store::make(ring_, 0, i32(0)));
  prologue.push_back(Store::make(ring_, 1, i32(s - 1)));
  prologue.push_back(wait_and_sync());
  prologue.push_back(
      IfThenElse::make(i32(0) < n_tiles_, load_fragments(i32(0), i32(0), 0)));

  Expr ko = int_var("k_outer");
  Expr next = ko + (s - 1);
  std::vector<Stmt> iteration = {
      IfThenElse::make(next < n_tiles_,
                       load_slice(first_tile_ + next, write_stage_)),
      commit()};
  if (steps > 1) {
    // Steps 0..steps-2 as a loop of pairs: step kk loads step kk+1 into the
    // other buffer.
    Expr kk = int_var("kk");
    std::vector<Stmt> pair;
    for (int half = 0; half < 2 && half < steps - 1; ++half) {
      Expr step = kk * 2 + half;
      Stmt body =
          Block::make({load_fragments(read_stage_, (step + 1) * 16, 1 - half),
                       multiply(half)});
      // An odd count of steps before the last leaves the second half of the
      // last pair out.
      if (half == 1 && (steps - 1) % 2 != 0)
        body = IfThenElse::make(step < steps - 1, body);
      pair.push_back(body);
    }
    iteration.push_back(
        For::make("kk", 0, steps / 2, ForKind::unrolled, Block::make(pair)));
  }
  iteration.push_back(multiply((steps - 1) % 2));
  iteration.push_back(wait_and_sync());
  iteration.push_back(advance(0));
  iteration.push_back(advance(1));
  iteration.push_back(IfThenElse::make(ko + 1 < n_tiles_,
                                       load_fragments(read_stage_, i32(0), 0)));
  Stmt loop = For::make("k_outer", 0, n_tiles_, ForKind::serial,
                        Block::make(iteration));
  return Block::make({Block::make(prologue), loop});
}

// Lane holds rows group, group+8 (h) and columns 2*tig, 2*tig+1 (e) of each
// tile.
Stmt TcGemmBuilder::epilogue() const {
  const int64_t m = spec_.m, n = spec_.n;
  const Buffer &c = spec_.c;
  Expr i = int_var("i"), j = int_var("j"), h = int_var("h"), e = int_var("e");
  Expr grow = tile_m_ * p_.bm + warp_row_ * p_.wm + i * 16 + g_ + h * 8;
  Expr gcol = tile_n_ * p_.bn + warp_col_ * p_.wn + j * 8 + tig_ * 2;
  Expr base = (i * ni_ + j) * 4 + h * 2;
  Stmt write;
  if (p_.epi_vec == 2) {
    Expr value = spec_.out16 ? pack_x2(input_, Load::make(acc_, base),
                                       Load::make(acc_, base + 1))
                             : Load::make(acc_, base, 2);
    write = IfThenElse::make(grow < i32(m) && gcol < i32(n),
                             Store::make(c, grow * i32(n) + gcol, value));
  } else {
    Expr index = grow * i32(n) + gcol + e;
    Expr v = Load::make(acc_, base + e);
    Stmt store = p_.split_k > 1
                     ? atomic_add(c, index, v)
                     : Store::make(c, index,
                                   spec_.out16 ? f32_to_storage(input_, v) : v);
    write =
        For::make("e", 0, 2, ForKind::unrolled,
                  IfThenElse::make(grow < i32(m) && gcol + e < i32(n), store));
  }
  auto each = [&](const Stmt& body) {
    return For::make("i", 0, mi_, ForKind::unrolled,
                     For::make("j", 0, ni_, ForKind::unrolled,
                               For::make("h", 0, 2, ForKind::unrolled, body)));
  };
  if (spec_.epilogue.empty()) return each(write);
  // The fused epilogue rewrites each accumulator in registers, then the store is as without.
  Stmt apply = For::make("e", 0, 2, ForKind::unrolled,
                         spec_.epilogue.in_place(acc_, base + e, grow, gcol + e));
  return each(Block::make({apply, write}));
}

// `body` with its buffers, the thread's warp position and lane, and the grid.
Stmt TcGemmBuilder::bind(Stmt body) const {
  body = Allocate::make(ring_, body);
  body = Allocate::make(b_frag_, body);
  body = Allocate::make(a_frag_, body);
  body = Allocate::make(acc_, body);
  body = Allocate::make(b_tile_.buffer, body);
  body = Allocate::make(a_tile_.buffer, body);
  Expr warp = tx_ / 32;
  body = LetStmt::make("warp_col", warp % p_.warps_n(), body);
  body = LetStmt::make("warp_row", warp / p_.warps_n(), body);
  body = LetStmt::make("thread_in_group", lane_ % 4, body);
  body = LetStmt::make("group", lane_ / 4, body);
  body = LetStmt::make("lane", tx_ % 32, body);
  return bind_tile_grid(
      body, {tiles_m_, tiles_n_, k_tiles_, p_.split_k, p_.raster, threads_});
}

Kernel TcGemmBuilder::build() const {
  Expr z = int_var("i");
  Stmt init = For::make("i", 0, mi_ * ni_ * 4, ForKind::unrolled,
                        Store::make(acc_, z, f32(0.0)));
  Kernel kernel;
  kernel.name = spec_.name;
  kernel.buffers = spec_.parameters;
  kernel.scalars = spec_.epilogue.scalars();
  kernel.body = bind(Block::make({init, main_loop(), epilogue()}));
  kernel.min_blocks = p_.min_blocks > 1
                          ? p_.min_blocks
                          : 0; // 1: no promise, as before the knob
  return kernel;
}

} // namespace

Kernel build_tc_gemm(const TcGemmSpec &spec, const TcParams &p) {
  return TcGemmBuilder(spec, p).build();
}

} // namespace cutune::tc
