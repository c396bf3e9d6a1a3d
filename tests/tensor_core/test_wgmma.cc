// Hopper's wgmma in the CPU emulator (src/emulator/device_prelude_wgmma.h) against the PTX ISA:
// the matrix descriptor's fields, every swizzle pattern of the canonical layouts, the D
// fragment mapping and full m64nNk16 products for several N, with A from shared memory or from
// registers, K-major and MN-major operands; and the misuses the emulator reports (no
// wait_group, accumulators written or read before it, no fence, a partial warpgroup).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "src/emulator/emulator.h"
#include "src/ir/wgmma_descriptor.h"
#include "tests/emulator/emulator_fixtures.h"

namespace cutune::emu {
namespace {

using Catch::Matchers::Contains;
using testing::buffer_param;
using testing::make_source;
using testing::random_floats;

// A kernel of `threads` threads (one warpgroup when 128) whose one m64n8k16 wgmma reads
// s[0..] (A and B alike) into acc and stores acc[0] to D: `before` runs between the fence
// and the wgmma, `between` between its commit and its wait_group 0, `after` after that.
std::string one_wgmma_kernel(const char* name, int threads, int shared_elements,
                             const char* params, const char* before, const char* between,
                             const char* after) {
  return fmt::format(R"(
extern "C" __global__ void __launch_bounds__({1}) {0}({2}) {{
  __shared__ __align__(1024) unsigned short s[{3}];
  for (int i = threadIdx.x; i < {3}; i += {1}) s[i] = 0;
  __syncthreads();
  float acc[4] = {{0, 0, 0, 0}};
  cutune_wgmma_fence();
  {4}
  long long d = cutune_wgmma_desc(s, 16, 1024, 1);
  cutune_wgmma_m64n8k16_f32_f16_ss_nn(acc, d, d, 0);
  cutune_wgmma_commit_group();
  {5}
  cutune_wgmma_wait_group_0();
  {6}
  D[threadIdx.x] = acc[0];
}}
)",
                     name, threads, params, shared_elements, before, between, after);
}

TEST_CASE("wgmma descriptors encode the ISA's bit fields", "[wgmma][descriptor]") {
  const unsigned long long d = cutune_wgmma_desc_encode(0x12340, 0x1230, 0x4560, 5, 1);
  CHECK((d & 0x3fff) == (0x12340 >> 4));
  CHECK((d >> 16 & 0x3fff) == (0x1230 >> 4));
  CHECK((d >> 32 & 0x3fff) == (0x4560 >> 4));
  CHECK((d >> 49 & 7) == 5);
  CHECK((d >> 62) == 1);
  CHECK((d & 0xc000ull) == 0);  // reserved bits 14-15, 30-31, 46-48, 52-61 stay zero
  CHECK((d & 0x00000000c0000000ull) == 0);
  CHECK((d & 0x3ff1c00000000000ull) == 0);
  CHECK(cutune_wgmma_desc_start(d) == 0x12340);
  CHECK(cutune_wgmma_desc_leading(d) == 0x1230);
  CHECK(cutune_wgmma_desc_stride(d) == 0x4560);
  CHECK(cutune_wgmma_desc_base(d) == 5);
  CHECK(cutune_wgmma_desc_swizzle(d) == kCutuneWgmmaSwizzle128);
  // Only bits 4-17 of an address are kept: (x & 0x3FFFF) >> 4.
  CHECK(cutune_wgmma_desc_start(cutune_wgmma_desc_encode(0x40010, 0, 0, 0, 0)) == 0x10);
  CHECK(cutune_wgmma_swizzle_bytes(kCutuneWgmmaSwizzle32) == 32);
  CHECK(cutune_wgmma_swizzle_bytes(kCutuneWgmmaSwizzle64) == 64);
  CHECK(cutune_wgmma_swizzle_bytes(kCutuneWgmmaSwizzleNone) == 0);
}

// The swizzle patterns as the ISA draws them: in row r (of `width` bytes) of a pattern, the
// 16-byte chunk c lands at chunk c ^ f(r): 128 B: r % 8; 64 B: (r / 2) % 4; 32 B: (r / 4) % 2.
TEST_CASE("every swizzle mode permutes 16-byte chunks as the ISA's patterns",
          "[wgmma][descriptor]") {
  struct Mode {
    unsigned code, width, rows_per_128;
  };
  for (Mode mode : {Mode{kCutuneWgmmaSwizzle128, 128, 1}, Mode{kCutuneWgmmaSwizzle64, 64, 2},
                    Mode{kCutuneWgmmaSwizzle32, 32, 4}}) {
    INFO("swizzle " << mode.width);
    const unsigned chunks = mode.width / 16;
    const unsigned long long d = cutune_wgmma_desc_encode(2048, 16, 8 * mode.width, 0, mode.code);
    for (unsigned m = 0; m < 64; ++m) {
      for (unsigned k = 0; k < mode.width / 2; ++k) {
        const unsigned row = m % 8, chunk = k * 2 / 16;
        const unsigned f = row / mode.rows_per_128 % chunks;
        const unsigned expect =
            2048 + m / 8 * 8 * mode.width + row * mode.width + (chunk ^ f) * 16 + k * 2 % 16;
        if (k < 16) REQUIRE(cutune_wgmma_element_address(d, false, m, k) == expect);
        // MN-major: rows are k, the contiguous run is mn (width / 2 elements).
        const unsigned per_row = mode.width / 2;
        const unsigned mn = k, kk = m % 16;
        const unsigned mrow = kk % 8, mchunk = mn * 2 / 16;
        const unsigned mf = mrow / mode.rows_per_128 % chunks;
        const unsigned lbo = 16 * mode.width, sbo = 8 * mode.width;
        const unsigned long long dm = cutune_wgmma_desc_encode(2048, lbo, sbo, 0, mode.code);
        const unsigned mexpect =
            2048 + kk / 8 * sbo + mrow * mode.width + (mchunk ^ mf) * 16 + mn * 2 % 16;
        REQUIRE(cutune_wgmma_element_address(dm, true, mn, kk) == mexpect);
        REQUIRE(cutune_wgmma_element_address(dm, true, mn + per_row, kk) == mexpect + lbo);
      }
    }
  }
  // The base offset shifts the pattern's rows: a pattern starting 3 rows past a 1024-byte
  // boundary, described with base 3, permutes as one that starts on it.
  const unsigned long long aligned = cutune_wgmma_desc_encode(0, 0, 1024, 0, 1);
  const unsigned long long shifted = cutune_wgmma_desc_encode(384, 0, 1024, 3, 1);
  for (unsigned m = 0; m < 8; ++m) {
    for (unsigned k = 0; k < 16; ++k) {
      CHECK(cutune_wgmma_element_address(shifted, false, m, k) ==
            384 + cutune_wgmma_element_address(aligned, false, m, k));
    }
  }
}

TEST_CASE("the interleaved (no swizzle) layouts place 8x16-byte core matrices by LBO and SBO",
          "[wgmma][descriptor]") {
  const unsigned long long k_major = cutune_wgmma_desc_encode(512, 128, 256, 0, 0);
  CHECK(cutune_wgmma_element_address(k_major, false, 0, 0) == 512);
  CHECK(cutune_wgmma_element_address(k_major, false, 1, 0) == 512 + 16);   // next row of the core
  CHECK(cutune_wgmma_element_address(k_major, false, 0, 7) == 512 + 14);   // along K in the core
  CHECK(cutune_wgmma_element_address(k_major, false, 0, 8) == 512 + 128);  // next K core: LBO
  CHECK(cutune_wgmma_element_address(k_major, false, 8, 0) == 512 + 256);  // next M core: SBO
  const unsigned long long mn_major = cutune_wgmma_desc_encode(0, 1024, 128, 0, 0);
  CHECK(cutune_wgmma_element_address(mn_major, true, 1, 0) == 2);
  CHECK(cutune_wgmma_element_address(mn_major, true, 0, 1) == 16);
  CHECK(cutune_wgmma_element_address(mn_major, true, 8, 0) == 128);   // next MN core: SBO
  CHECK(cutune_wgmma_element_address(mn_major, true, 0, 8) == 1024);  // next K core: LBO
}

// ---- Products in the emulator.

struct Layout {
  bool mn_major = false;
  unsigned swizzle = kCutuneWgmmaSwizzleNone;
};

unsigned width_of(Layout l) { return cutune_wgmma_swizzle_bytes(l.swizzle); }

// LBO and SBO of a tile of `mn` rows or columns in layout `l` (as the test kernel writes it).
std::pair<unsigned, unsigned> offsets(Layout l, unsigned mn) {
  const unsigned t = width_of(l);
  if (!l.mn_major) return t == 0 ? std::pair{128u, 256u} : std::pair{16u, 8 * t};
  return t == 0 ? std::pair{16 * mn, 128u} : std::pair{16 * t, 8 * t};
}

struct Product {
  int n = 64;
  bool bf16 = false;
  bool a_in_registers = false;
  Layout a, b;
  int k_steps = 1;     // chained wgmmas on the same accumulators, one group
  std::string misuse;  // "" or one of: no_wait, early_read, early_write, no_fence
};

// A 128-thread kernel: A (64 x 16·k_steps, row-major) and B (16·k_steps x N, row-major) from
// global to shared in the chosen layouts (the layout formulas written out again here), D (64 x
// N, row-major) = A·B + 0.5, read back through the ISA's D fragment table.
std::string product_code(const Product& p) {
  const char* type = p.bf16 ? "bf16" : "f16";
  const std::string name =
      p.a_in_registers
          ? fmt::format("cutune_wgmma_m64n{}k16_f32_{}_rs_{}", p.n, type, p.b.mn_major ? "t" : "n")
          : fmt::format("cutune_wgmma_m64n{}k16_f32_{}_ss_{}{}", p.n, type,
                        p.a.mn_major ? "t" : "n", p.b.mn_major ? "t" : "n");
  auto [a_lbo, a_sbo] = offsets(p.a, 64);
  auto [b_lbo, b_sbo] = offsets(p.b, p.n);
  const int k = 16 * p.k_steps;
  std::string code =
      fmt::format(R"(
__device__ int tile_offset(int mn, int k, int mn_major, int t, int lbo, int sbo) {{
  int at;
  if (!mn_major && t == 0) at = mn / 8 * sbo + mn % 8 * 16 + k / 8 * lbo + k % 8 * 2;
  else if (!mn_major) at = mn / 8 * sbo + mn % 8 * t + k * 2;
  else if (t == 0) at = mn / 8 * sbo + mn % 8 * 2 + k / 8 * lbo + k % 8 * 16;
  else at = mn / (t / 2) * lbo + mn % (t / 2) * 2 + k / 8 * sbo + k % 8 * t;
  if (t != 0) at ^= ((at >> 7) & (t / 16 - 1)) << 4;
  return at;
}}
extern "C" __global__ void __launch_bounds__(128) product(float* __restrict__ D,
    const float* __restrict__ A, const float* __restrict__ B) {{
  __shared__ __align__(1024) unsigned short sa[2][4096];
  __shared__ __align__(1024) unsigned short sb[2][16384];
  const int tid = threadIdx.x, w = tid / 32, g = tid % 32 / 4, q = tid % 4;
  for (int s = 0; s < {k_steps}; ++s) {{
    for (int i = tid; i < 64 * 16; i += 128) {{
      int m = i / 16, kk = i % 16;
      sa[s][tile_offset(m, kk, {a_mn}, {a_t}, {a_lbo}, {a_sbo}) / 2] =
          cutune_f32_to_{type}(A[m * {k} + 16 * s + kk]);
    }}
    for (int i = tid; i < 16 * {n}; i += 128) {{
      int kk = i / {n}, c = i % {n};
      sb[s][tile_offset(c, kk, {b_mn}, {b_t}, {b_lbo}, {b_sbo}) / 2] =
          cutune_f32_to_{type}(B[(16 * s + kk) * {n} + c]);
    }}
  }}
  __syncthreads();
  float acc[{half}];
  for (int i = 0; i < {half}; ++i) acc[i] = 0.5f;
  unsigned a[2][4];
  for (int s = 0; s < {k_steps}; ++s) {{
    for (int j = 0; j < 4; ++j) a[s][j] = 0;
    for (int i = 0; i < 8; ++i) {{
      int row = 16 * w + g + 8 * (i / 2 % 2), col = 2 * q + i % 2 + 8 * (i / 4);
      a[s][i / 2] |= (unsigned)cutune_f32_to_{type}(A[row * {k} + 16 * s + col]) << (16 * (i % 2));
    }}
  }}
  {fence}
  for (int s = 0; s < {k_steps}; ++s) {{
    long long da = cutune_wgmma_desc(sa[s], {a_lbo}, {a_sbo}, {a_sw});
    long long db = cutune_wgmma_desc(sb[s], {b_lbo}, {b_sbo}, {b_sw});
    {call}
  }}
  cutune_wgmma_commit_group();
  {before_wait}
  {wait}
  for (int i = 0; i < {half}; ++i) {{
    int row = 16 * w + g + 8 * (i / 2 % 2), col = 8 * (i / 4) + 2 * q + i % 2;
    D[row * {n} + col] = acc[i];
  }}
}}
)",
                  fmt::arg("k_steps", p.k_steps), fmt::arg("k", k), fmt::arg("n", p.n),
                  fmt::arg("half", p.n / 2), fmt::arg("type", type),
                  fmt::arg("a_mn", int(p.a.mn_major)), fmt::arg("a_t", width_of(p.a)),
                  fmt::arg("a_lbo", a_lbo), fmt::arg("a_sbo", a_sbo), fmt::arg("a_sw", p.a.swizzle),
                  fmt::arg("b_mn", int(p.b.mn_major)), fmt::arg("b_t", width_of(p.b)),
                  fmt::arg("b_lbo", b_lbo), fmt::arg("b_sbo", b_sbo), fmt::arg("b_sw", p.b.swizzle),
                  fmt::arg("fence", p.misuse == "no_fence" ? "" : "cutune_wgmma_fence();"),
                  fmt::arg("call", p.a_in_registers ? name + "(acc, a[s], db, 1); (void)da;"
                                                    : name + "(acc, da, db, 1);"),
                  fmt::arg("before_wait", p.misuse == "early_write"  ? "acc[1] = 2.0f;"
                                          : p.misuse == "early_read" ? "D[0] = acc[0] + 1.0f;"
                                                                     : ""),
                  fmt::arg("wait", p.misuse == "no_wait" ? "" : "cutune_wgmma_wait_group_0();"));
  if (p.misuse == "no_wait") {
    // Never reading the accumulators: the results are simply never waited for.
    const std::string read = "    D[row * " + std::to_string(p.n) + " + col] = acc[i];";
    code.replace(code.find(read), read.size(),
                 "    D[row * " + std::to_string(p.n) + " + col] = 0.0f;");
  }
  return code;
}

struct Run {
  EmuResult result;
  std::vector<float> d, expect;
};

float to16(float x, bool bf16);

Run run_product(const Product& p) {
  const int k = 16 * p.k_steps;
  std::vector<float> a = random_floats(64 * k, 7 + p.n), b = random_floats(k * p.n, 11 + p.n);
  for (float& x : a) x = to16(x, p.bf16);
  for (float& x : b) x = to16(x, p.bf16);
  std::vector<float> expect = testing::reference_gemm(a, b, 64, p.n, k);
  for (float& x : expect) x += 0.5f;
  CudaSource src = make_source("product", product_code(p),
                               {buffer_param("D", 64 * p.n), buffer_param("A", 64 * k, true),
                                buffer_param("B", k * p.n, true)},
                               Dim3{1, 1, 1}, Dim3{128, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 64 * p.n),
                                  HostBuffer::from_floats(a), HostBuffer::from_floats(b)};
  static Emulator emu;
  Run r;
  r.result = emu.run(src, bufs, {});
  r.d = bufs[0].to_floats();
  r.expect = std::move(expect);
  return r;
}

// Rounds to the 16-bit type by the same round-to-nearest-even as the prelude (exact for the
// test: the reference then sees exactly the kernel's inputs).
float to16(float x, bool bf16) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (bf16) {
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  } else {
    // Inputs are in (-1, 1): normal binary16 values keep 10 fraction bits down to 2^-14.
    const float scaled = std::ldexp(std::nearbyint(std::ldexp(x, 24)), -24);
    if (std::fabs(x) < 0x1p-14f) return scaled;
    int e;
    std::frexp(x, &e);
    return std::ldexp(std::nearbyint(std::ldexp(x, 11 - e)), e - 11);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void check_close(const Run& r) {
  INFO(r.result.message);
  REQUIRE(r.result.status == EmuStatus::ok);
  double worst = 0;
  for (size_t i = 0; i < r.d.size(); ++i) {
    worst =
        std::max(worst, std::fabs(double{r.d[i]} - r.expect[i]) / (1.0 + std::fabs(r.expect[i])));
  }
  CHECK(worst < 1e-5);
}

}  // namespace

TEST_CASE("m64nNk16 products from shared memory match for every layout and several N",
          "[wgmma][emulator]") {
  struct Case {
    int n;
    bool bf16;
    Layout a, b;
  };
  const Layout k_none{false, kCutuneWgmmaSwizzleNone}, k128{false, kCutuneWgmmaSwizzle128},
      k64{false, kCutuneWgmmaSwizzle64}, k32{false, kCutuneWgmmaSwizzle32},
      mn_none{true, kCutuneWgmmaSwizzleNone}, mn128{true, kCutuneWgmmaSwizzle128},
      mn64{true, kCutuneWgmmaSwizzle64}, mn32{true, kCutuneWgmmaSwizzle32};
  for (Case c :
       {Case{64, false, k128, k128}, Case{8, false, k_none, k_none}, Case{136, true, k64, mn128},
        Case{256, false, k32, mn64}, Case{64, true, mn128, mn32}, Case{24, false, mn_none, mn_none},
        Case{128, false, mn64, k64}, Case{40, true, mn32, k32}}) {
    Product p;
    p.n = c.n;
    p.bf16 = c.bf16;
    p.a = c.a;
    p.b = c.b;
    INFO("N " << c.n << (c.bf16 ? " bf16" : " f16") << " A " << (c.a.mn_major ? "MN" : "K")
              << "-major swizzle " << width_of(c.a) << ", B " << (c.b.mn_major ? "MN" : "K")
              << "-major swizzle " << width_of(c.b));
    check_close(run_product(p));
  }
}

TEST_CASE("m64nNk16 with A from registers matches, and chained wgmmas accumulate",
          "[wgmma][emulator]") {
  for (int n : {32, 200}) {
    Product p;
    p.n = n;
    p.a_in_registers = true;
    p.bf16 = n == 200;
    p.b = Layout{n == 200, kCutuneWgmmaSwizzle128};
    INFO("rs N " << n);
    check_close(run_product(p));
  }
  Product chained;
  chained.n = 48;
  chained.k_steps = 2;
  chained.a = Layout{false, kCutuneWgmmaSwizzle64};
  chained.b = Layout{true, kCutuneWgmmaSwizzle128};
  check_close(run_product(chained));
}

TEST_CASE("wgmma misuses are reported", "[wgmma][emulator]") {
  Product p;
  p.n = 16;
  p.a = p.b = Layout{false, kCutuneWgmmaSwizzle128};
  p.misuse = "no_wait";
  Run r = run_product(p);
  REQUIRE(r.result.status == EmuStatus::crashed);
  CHECK_THAT(r.result.message, Contains("missing wgmma.wait_group"));

  p.misuse = "early_write";
  r = run_product(p);
  REQUIRE(r.result.status == EmuStatus::crashed);
  CHECK_THAT(r.result.message, Contains("written before the wgmma.wait_group"));

  p.misuse = "no_fence";
  r = run_product(p);
  REQUIRE(r.result.status == EmuStatus::crashed);
  CHECK_THAT(r.result.message, Contains("without a wgmma.fence"));

  // Reading the accumulators before the wait sees the poison (NaN), never the result.
  p.misuse = "early_read";
  r = run_product(p);
  REQUIRE(r.result.status == EmuStatus::ok);
  CHECK(std::isnan(r.d[0]));
  CHECK(r.d[1] == Approx(r.expect[1]).epsilon(1e-5));
}

TEST_CASE("shared memory a wgmma in flight reads is written only after its wait",
          "[wgmma][emulator]") {
  auto run = [](const char* before, const char* between, const char* after) {
    const std::string code =
        one_wgmma_kernel("inflight", 128, 8192,
                         "float* __restrict__ D, const float* __restrict__ G", before, between,
                         after);
    CudaSource src = make_source("inflight", code, {buffer_param("D", 128), buffer_param("G", 512, true)},
                                 Dim3{1, 1, 1}, Dim3{128, 1, 1});
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 128),
                                    HostBuffer::zeros(ir::Type::f32(), 512)};
    static Emulator emu;
    return emu.run(src, bufs, {});
  };
  const char* store = "s[threadIdx.x] = 1;";
  const char* copy = "cutune_cp_async_16(&s[8 * threadIdx.x], G + 4 * threadIdx.x, 16); "
                     "cutune_cp_async_commit();";
  // After the wait, both are fine.
  EmuResult r = run("", "", store);
  INFO(r.message);
  CHECK(r.status == EmuStatus::ok);
  r = run("", "", (std::string(copy) + " cutune_cp_async_wait_0();").c_str());
  INFO(r.message);
  CHECK(r.status == EmuStatus::ok);
  // A store while the wgmma is in flight races with it (the sanitizer sees stores).
  r = run("", store, "");
  REQUIRE(r.status == EmuStatus::race);
  CHECK_THAT(r.message, Contains("while the wgmma on line") && Contains("still reads it"));
  // A copy issued onto its operands then: the emulator checks copies with or without the
  // sanitizer.
  r = run("", copy, "cutune_cp_async_wait_0();");
  REQUIRE(r.status == EmuStatus::crashed);
  CHECK_THAT(r.message, Contains("cp.async: writes shared memory") &&
                            Contains("no wgmma.wait_group has completed it yet"));
  // A wgmma issued onto a copy still in flight reads the bytes before they land.
  r = run(copy, "", "cutune_cp_async_wait_0();");
  REQUIRE(r.status == EmuStatus::crashed);
  CHECK_THAT(r.message, Contains("that the cp.async on line") && Contains("has not written yet"));
}

TEST_CASE("a wgmma needs its whole warpgroup", "[wgmma][emulator]") {
  const std::string code =
      one_wgmma_kernel("partial", 64, 1024, "float* __restrict__ D", "", "", "");
  CudaSource src =
      make_source("partial", code, {buffer_param("D", 64)}, Dim3{1, 1, 1}, Dim3{64, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 64)};
  static Emulator emu;
  EmuResult r = emu.run(src, bufs, {});
  REQUIRE(r.status == EmuStatus::barrier_divergence);
  CHECK_THAT(r.message, Contains("its warpgroup has only 64 threads"));
}

}  // namespace cutune::emu
