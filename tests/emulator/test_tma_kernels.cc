// Kernels built from the IR with the mbarrier and TMA intrinsics (src/ir/tma_intrinsics.h),
// generated as CUDA C, run in the CPU emulator against host references, and compiled with NVRTC
// for sm_90a: a TMA tile load through each swizzle, the deadlock and expect_tx reports, and a
// three-stage producer/consumer ring.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "src/codegen/codegen_cuda.h"
#include "src/emulator/emulator.h"
#include "src/emulator/smem_swizzle.h"
#include "src/ir/ir_operators.h"
#include "src/ir/ir_printer.h"
#include "src/ir/tma_intrinsics.h"
#include "src/runtime/nvrtc_builder.h"

using namespace cutune;
using namespace cutune::ir;
using cutune::emu::Emulator;
using cutune::emu::EmulatorOptions;
using cutune::emu::EmuResult;
using cutune::emu::EmuStatus;
using cutune::emu::HostBuffer;

namespace {

constexpr int kBox0 = 32, kBox1 = 8;  // float32: 128-byte box rows
constexpr int kBoxElements = kBox0 * kBox1;
constexpr int kBoxBytes = kBoxElements * 4;

Expr var(const char* name) { return int_var(name); }

CudaSource generate(const Kernel& k) {
  VerifyResult r = verify(k, TargetLimits{});
  INFO("kernel:\n" << to_string(k));
  for (const std::string& e : r.errors) INFO(e);
  REQUIRE(r.ok());
  return generate_cuda(k, r.launch);
}

Stmt bind(const char* name, int extent, ForKind kind, Stmt body) {
  return For::make(name, 0, extent, kind, std::move(body));
}

TensorMapDesc f32_map(const char* buffer, int w, int h, int pitch, TmaSwizzle swizzle) {
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

  int gx() const { return (w + kBox0 - 1) / kBox0; }
  int gy() const { return (h + kBox1 - 1) / kBox1; }
  int out_w() const { return gx() * kBox0; }
  int out_elements() const { return out_w() * gy() * kBox1; }

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
        IfThenElse::make(eq(tx, 0), Block::make({prefetch_tensormap(tensor_map_ref("in_map")),
                                                 Block::make(issue)})),
        mbarrier_wait_parity(b0, 0),
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

  EmuResult run(std::vector<float>& result, std::vector<float>& expected) const {
    CudaSource src = generate(build());
    std::vector<float> in(size_t(kBox0) * h);
    for (size_t n = 0; n < in.size(); ++n) in[n] = float(n) * 0.25f + 1.0f;
    expected.assign(size_t(tiles()) * kBoxElements, 0.0f);
    std::copy(in.begin(), in.end(), expected.begin());  // rows past h are zero
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

}  // namespace

TEST_CASE("the CUDA text declares the tensor map parameter and aligns TMA destinations",
          "[tma][codegen]") {
  CudaSource src = generate(TileKernel{37, 29, 40, TmaSwizzle::b128}.build());
  INFO(src.code);
  CHECK_THAT(src.code, Catch::Contains("const __grid_constant__ cutune_tensor_map in_map)"));
  CHECK_THAT(src.code, Catch::Contains("__shared__ __align__(1024) float tile[256];"));
  CHECK_THAT(src.code, Catch::Contains("struct __align__(64) cutune_tensor_map {"));
  CHECK_THAT(src.code, Catch::Contains("cutune_tma_load_2d(&tile[0], in_map, &bar[0], "));
  CHECK_THAT(src.code, Catch::Contains("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
                                       "complete_tx::bytes"));
  CHECK_THAT(src.code, Catch::Contains("mbarrier.try_wait.parity.shared::cta.b64"));
  CHECK_THAT(src.code, !Catch::Contains("#include"));
  REQUIRE(src.params.size() == 4);
  REQUIRE(src.params[3].tensor_map.has_value());
  CHECK(src.params[3].tensor_map->buffer == "In");
  CHECK_FALSE(src.params[3].is_pointer);
}

TEST_CASE("TMA and mbarrier kernels compile with NVRTC for sm_90a", "[tma][nvrtc]") {
  std::vector<CudaSource> sources = {generate(TileKernel{37, 29, 40, TmaSwizzle::b128}.build()),
                                     generate(TileKernel{64, 16, 64, TmaSwizzle::none}.build()),
                                     generate(RingKernel{}.build())};
  // test_wait, expect_tx and the fence, which the kernels above do not use.
  Buffer bar = Buffer::make("bar", Type::i64(), MemoryScope::shared, 1);
  Buffer out = Buffer::make("Out", Type::i32(), MemoryScope::global, 1);
  Expr b0 = address_of(bar, 0);
  Kernel extra;
  extra.name = "mbarrier_extra";
  extra.buffers = {out};
  extra.body = bind(
      "tx", 32, ForKind::thread_x,
      Allocate::make(
          bar,
          Block::make({IfThenElse::make(eq(var("tx"), 0), mbarrier_init(b0, 32)), Sync::make(),
                       fence_proxy_async(), mbarrier_expect_tx(b0, 0), mbarrier_arrive(b0),
                       IfThenElse::make(mbarrier_test_wait_parity(b0, 0), Store::make(out, 0, 1)),
                       mbarrier_wait_parity(b0, 0), Sync::make(),
                       IfThenElse::make(eq(var("tx"), 0), mbarrier_inval(b0))})));
  sources.push_back(generate(extra));
  BuildOptions options;
  options.arch = "sm_90a";
  NvrtcBuilder builder(options, 2);
  std::vector<CompileResult> results = builder.compile_batch(sources);
  for (size_t n = 0; n < results.size(); ++n) {
    INFO("kernel " << sources[n].kernel_name << ":\n"
                   << sources[n].code << "log:\n"
                   << results[n].log);
    CHECK(results[n].ok());
  }
}

TEST_CASE("a TMA tile load honours box, pitch, zero fill and each swizzle in the emulator",
          "[tma][emulator]") {
  // 37 x 29 floats with a 40-float pitch: 2 x 4 boxes, the last column and row of boxes
  // partly outside the tensor.
  for (TmaSwizzle swizzle : {TmaSwizzle::none, TmaSwizzle::b128}) {
    TileKernel k{37, 29, 40, swizzle};
    std::vector<float> result;
    EmuResult r = k.run(result);
    INFO("swizzle " << swizzle_name(swizzle) << ": " << r.message);
    REQUIRE(r.status == EmuStatus::ok);
    CHECK(result == k.expected());
  }
}

TEST_CASE("reading a TMA tile through the wrong swizzle gives wrong data", "[tma][emulator]") {
  TileKernel k{37, 29, 40, TmaSwizzle::b128};
  TileKernel reader = k;
  reader.swizzle = TmaSwizzle::none;  // the kernel's map swizzles, its reads do not
  CudaSource src = generate(k.build());
  std::vector<float> in = k.input();
  std::vector<int32_t> p = reader.perm();
  std::vector<HostBuffer> buffers = {HostBuffer::zeros(Type::f32(), k.out_elements()),
                                     HostBuffer::from_floats(in), HostBuffer::from_ints(p)};
  EmulatorOptions options;
  options.host_threads = 1;
  Emulator emu(options);
  EmuResult r = emu.run(src, buffers);
  REQUIRE(r.status == EmuStatus::ok);
  CHECK(buffers[0].to_floats() != k.expected());
}

TEST_CASE("an expect_tx larger than the copies is reported as an mbarrier deadlock",
          "[tma][emulator]") {
  TileKernel k{37, 29, 40, TmaSwizzle::none};
  k.expect_bytes = kBoxBytes + 16;
  std::vector<float> result;
  EmuResult r = k.run(result);
  INFO(r.message);
  CHECK(r.status == EmuStatus::barrier_divergence);
  CHECK_THAT(r.message, Catch::Contains("mbarrier deadlock in block"));
  CHECK_THAT(r.message, Catch::Contains("tx-count 16 bytes"));
}

TEST_CASE("an expect_tx smaller than the copies is reported", "[tma][emulator]") {
  TileKernel k{37, 29, 40, TmaSwizzle::none};
  k.copies = 2;  // two boxes against one barrier, which expects one box's bytes
  std::vector<float> result;
  EmuResult r = k.run(result);
  INFO(r.message);
  CHECK(r.status == EmuStatus::crashed);
  CHECK_THAT(r.message, Catch::Contains("expect_tx count is too small"));
}

TEST_CASE("a three-stage TMA ring with mbarrier phases copies every tile", "[tma][emulator]") {
  std::vector<float> result, expected;
  EmuResult r = RingKernel{}.run(result, expected);
  INFO(r.message);
  REQUIRE(r.status == EmuStatus::ok);
  CHECK(result == expected);
}

TEST_CASE("a ring that waits with the wrong phase parity is caught", "[tma][emulator]") {
  RingKernel k;
  k.wrong_parity = true;
  std::vector<float> result, expected;
  EmuResult r = k.run(result, expected);
  INFO(r.message);
  CHECK_FALSE((r.status == EmuStatus::ok && result == expected));
}
