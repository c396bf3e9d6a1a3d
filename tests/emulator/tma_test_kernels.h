#pragma once
// Kernels built from the IR with the mbarrier and TMA intrinsics, with their inputs and expected
// outputs, for the emulator's tests (test_tma_kernels.cc) and the GPU's (tests/runtime/
// test_tma_gpu.cc): a TMA tile load per block, and a three-stage producer/consumer ring.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "src/codegen/codegen_cuda.h"
#include "src/emulator/emulator.h"
#include "src/emulator/smem_swizzle.h"
#include "src/ir/ir_operators.h"
#include "src/ir/ir_printer.h"
#include "src/ir/tma_intrinsics.h"

namespace cutune::test::tma {

using namespace cutune::ir;
using cutune::emu::Emulator;
using cutune::emu::EmulatorOptions;
using cutune::emu::EmuResult;
using cutune::emu::HostBuffer;

inline constexpr int kBox0 = 32, kBox1 = 8;  // float32: 128-byte box rows
inline constexpr int kBoxElements = kBox0 * kBox1;
inline constexpr int kBoxBytes = kBoxElements * 4;

inline ir::Expr var(const char* name) { return int_var(name); }

inline CudaSource generate(const Kernel& k) {
  VerifyResult r = verify(k, TargetLimits{});
  INFO("kernel:\n" << to_string(k));
  for (const std::string& e : r.errors) INFO(e);
  REQUIRE(r.ok());
  return generate_cuda(k, r.launch);
}

inline ir::Stmt bind(const char* name, int extent, ForKind kind, Stmt body) {
  return For::make(name, 0, extent, kind, std::move(body));
}

inline ir::TensorMapDesc f32_map(const char* buffer, int w, int h, int pitch, TmaSwizzle swizzle) {
  TensorMapDesc d;
  d.buffer = buffer;
  d.dtype = DType::Float32;
  d.dims[0] = w;
  d.dims[1] = h;
  d.row_stride_bytes = int64_t{pitch} * 4;
  d.box[0] = kBox0;
  d.box[1] = kBox1;
  d.swizzle = swizzle;
  return d;
}

// One block per 32 x 8 box of a W x H float tensor (pitch P): thread 0 initialises the
// barrier, expects `expect_bytes` and issues `copies` TMA loads of the box (the second into the
// upper half of the tile); every thread waits for the phase and copies the box out, reading
// element e of the box at tile[perm[e]] (the swizzle's inverse, given by the host). Out holds
// the boxes side by side, GX*32 x GY*8.
struct TileKernel {
  int w, h, pitch;
  TmaSwizzle swizzle;
  int expect_bytes = kBoxBytes;
  int copies = 1;
  // The planted bug: a __syncthreads instead of the wait on the barrier's phase.
  bool sync_instead_of_wait = false;
  // The copies issued by the lane elect.sync picks in warp 1 (as the GEMM templates issue
  // theirs) instead of by thread 0; `partial_elect`, the misuse: elect.sync reached by thread
  // 0 alone (`tx == 0 && elect_one()`).
  bool elect_issuer = false;
  bool partial_elect = false;

  int gx() const { return (w + kBox0 - 1) / kBox0; }
  int gy() const { return (h + kBox1 - 1) / kBox1; }
  int out_w() const { return gx() * kBox0; }
  int out_elements() const { return out_w() * gy() * kBox1; }

  Expr issuer(const Expr& tx) const {
    if (partial_elect) return eq(tx, 0) && elect_one();
    if (elect_issuer) return eq(warp_uniform(tx / 32), 1) && elect_one();
    return eq(tx, 0);
  }

  Kernel build() const {
    Buffer out = Buffer::make("Out", Type::f32(), MemoryScope::global, out_elements());
    Buffer in = Buffer::make("In", Type::f32(), MemoryScope::global, int64_t{pitch} * h, true);
    Buffer perm = Buffer::make("Perm", Type::i32(), MemoryScope::global, kBoxElements, true);
    Buffer tile = Buffer::make("tile", Type::f32(), MemoryScope::shared, kBoxElements * copies);
    Buffer bar = Buffer::make("bar", Type::i64(), MemoryScope::shared, 1);
    Expr tx = var("tx"), bx = var("bx"), by = var("by"), i = var("i"), e = var("e");
    Expr b0 = address_of(bar, 0);
    std::vector<Stmt> issue = {mbarrier_arrive_expect_tx(b0, expect_bytes)};
    for (int c = 0; c < copies; ++c) {
      issue.push_back(tma_load_2d(address_of(tile, c * kBoxElements), tensor_map_ref("in_map"), b0,
                                  bx * kBox0, by * kBox1));
    }
    Stmt copy_out = Store::make(out, (by * kBox1 + e / kBox0) * out_w() + bx * kBox0 + e % kBox0,
                                Load::make(tile, Load::make(perm, e)));
    Stmt body = Block::make({
        IfThenElse::make(eq(tx, 0), mbarrier_init(b0, 1)),
        Sync::make(),
        IfThenElse::make(issuer(tx), Block::make({prefetch_tensormap(tensor_map_ref("in_map")),
                                                  Block::make(issue)})),
        sync_instead_of_wait ? Sync::make() : mbarrier_wait_parity(b0, 0),
        For::make("i", 0, kBoxElements / 128, ForKind::serial,
                  LetStmt::make("e", tx + i * 128, copy_out)),
    });
    body = Allocate::make(tile, Allocate::make(bar, body));
    body = bind("bx", gx(), ForKind::block_x,
                bind("by", gy(), ForKind::block_y, bind("tx", 128, ForKind::thread_x, body)));
    Kernel k;
    k.name = "tma_tile";
    k.buffers = {out, in, perm};
    k.tensor_maps = {TensorMapParam{"in_map", f32_map("In", w, h, pitch, swizzle)}};
    k.body = body;
    return k;
  }

  std::vector<float> input() const {
    std::vector<float> v(size_t(pitch) * h, -1.0f);  // the pitch padding never shows
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) v[size_t(y) * pitch + x] = float(1 + x + 1000 * y);
    return v;
  }

  std::vector<int32_t> perm() const {
    std::vector<int32_t> p(kBoxElements);
    for (int e = 0; e < kBoxElements; ++e) {
      p[e] = int32_t(cutune_smem::swizzle_offset(unsigned(swizzle), uint64_t(e) * 4) / 4);
    }
    return p;
  }

  std::vector<float> expected() const {
    std::vector<float> v(static_cast<size_t>(out_elements()));
    for (int y = 0; y < gy() * kBox1; ++y)
      for (int x = 0; x < out_w(); ++x)
        v[size_t(y) * out_w() + x] = (x < w && y < h) ? float(1 + x + 1000 * y) : 0.0f;
    return v;
  }

  EmuResult run(std::vector<float>& result) const {
    CudaSource src = generate(build());
    std::vector<float> in = input();
    std::vector<int32_t> p = perm();
    std::vector<HostBuffer> buffers = {HostBuffer::zeros(Type::f32(), out_elements()),
                                       HostBuffer::from_floats(in), HostBuffer::from_ints(p)};
    EmulatorOptions options;
    options.host_threads = 1;
    options.sanitize_all_blocks = true;
    Emulator emu(options);
    EmuResult r = emu.run(src, buffers);
    result = buffers[0].to_floats();
    return r;
  }
};

// A three-stage ring over the 8-row tiles of a 32 x H float tensor, one block: thread 0 fills
// stage k % 3 with tile k (TMA, full[s]) once all 128 threads have released it (empty[s]), and
// every thread waits for full[s] with the phase parity (k / 3) % 2, copies the tile out and
// arrives on empty[s]. `wrong_parity` plants a wait that always uses parity 0.
struct RingKernel {
  int h = 53;
  bool wrong_parity = false;
  static constexpr int kStages = 3;

  int tiles() const { return (h + kBox1 - 1) / kBox1; }

  Kernel build() const {
    Buffer out =
        Buffer::make("Out", Type::f32(), MemoryScope::global, int64_t{tiles()} * kBoxElements);
    Buffer in = Buffer::make("In", Type::f32(), MemoryScope::global, int64_t{kBox0} * h, true);
    Buffer ring = Buffer::make("ring", Type::f32(), MemoryScope::shared, kStages * kBoxElements);
    Buffer full = Buffer::make("full", Type::i64(), MemoryScope::shared, kStages);
    Buffer empty = Buffer::make("empty", Type::i64(), MemoryScope::shared, kStages);
    Expr tx = var("tx"), k = var("k"), s = var("s"), ph = var("ph"), i = var("i"), e = var("e"),
         j = var("j");
    Expr map = tensor_map_ref("in_map");
    auto fill = [&](Expr stage, Expr tile) {
      return Block::make({mbarrier_arrive_expect_tx(address_of(full, stage), kBoxBytes),
                          tma_load_2d(address_of(ring, stage * kBoxElements), map,
                                      address_of(full, stage), 0, tile * kBox1)});
    };
    Stmt init = For::make("j", 0, kStages, ForKind::serial,
                          Block::make({mbarrier_init(address_of(full, j), 1),
                                       mbarrier_init(address_of(empty, j), 128)}));
    Stmt prologue = For::make("j", 0, std::min(kStages, tiles()), ForKind::serial, fill(j, j));
    Stmt consume = Block::make({
        mbarrier_wait_parity(address_of(full, s), wrong_parity ? Expr(0) : ph),
        For::make("i", 0, kBoxElements / 128, ForKind::serial,
                  LetStmt::make("e", tx + i * 128,
                                Store::make(out, k * kBoxElements + e,
                                            Load::make(ring, s * kBoxElements + e)))),
        mbarrier_arrive(address_of(empty, s)),
        IfThenElse::make(
            eq(tx, 0) && k + kStages < tiles(),
            Block::make({mbarrier_wait_parity(address_of(empty, s), ph), fill(s, k + kStages)})),
    });
    Stmt body = Block::make({
        IfThenElse::make(eq(tx, 0), init),
        Sync::make(),
        IfThenElse::make(eq(tx, 0), prologue),
        For::make("k", 0, tiles(), ForKind::serial,
                  LetStmt::make("s", k % kStages, LetStmt::make("ph", k / kStages % 2, consume))),
        Sync::make(),
        IfThenElse::make(eq(tx, 0), For::make("j", 0, kStages, ForKind::serial,
                                              Block::make({mbarrier_inval(address_of(full, j)),
                                                           mbarrier_inval(address_of(empty, j))}))),
    });
    body = Allocate::make(ring, Allocate::make(full, Allocate::make(empty, body)));
    body = bind("tx", 128, ForKind::thread_x, body);
    Kernel kern;
    kern.name = "tma_ring";
    kern.buffers = {out, in};
    kern.tensor_maps = {TensorMapParam{"in_map", f32_map("In", kBox0, h, kBox0, TmaSwizzle::none)}};
    kern.body = body;
    return kern;
  }

  std::vector<float> input() const {
    std::vector<float> in(size_t(kBox0) * h);
    for (size_t n = 0; n < in.size(); ++n) in[n] = float(n) * 0.25f + 1.0f;
    return in;
  }

  std::vector<float> expected() const {
    std::vector<float> in = input();
    std::vector<float> out(size_t(tiles()) * kBoxElements, 0.0f);
    std::copy(in.begin(), in.end(), out.begin());  // rows past h are zero
    return out;
  }

  EmuResult run(std::vector<float>& result, std::vector<float>& expected_out) const {
    CudaSource src = generate(build());
    std::vector<float> in = input();
    expected_out = expected();
    std::vector<HostBuffer> buffers = {
        HostBuffer::zeros(Type::f32(), int64_t{tiles()} * kBoxElements),
        HostBuffer::from_floats(in)};
    EmulatorOptions options;
    options.host_threads = 1;
    Emulator emu(options);
    EmuResult r = emu.run(src, buffers);
    result = buffers[0].to_floats();
    return r;
  }
};

}  // namespace cutune::test::tma
