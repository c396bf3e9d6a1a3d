// The emulator's tensor-core and warp intrinsics (device_prelude.h, block_runner.h) against
// host-side implementations written here from the PTX ISA's definitions: every lane's
// registers are checked through the ISA's (lane, register) -> (row, col) tables.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "src/emulator/emulator.h"
#include "tests/emulator/emulator_fixtures.h"

namespace cutune::emu {
namespace {

using Catch::Matchers::Contains;
using testing::buffer_param;
using testing::int_param;
using testing::make_source;

KernelParam word_param(std::string name, int64_t elements, bool is_const = false) {
  return KernelParam{std::move(name), ir::Type::i32(), true, is_const, elements};
}

HostBuffer words(const std::vector<uint32_t>& v) {
  std::vector<int32_t> s(v.size());
  std::memcpy(s.data(), v.data(), v.size() * 4);
  return HostBuffer::from_ints(s);
}

std::vector<uint32_t> to_words(const HostBuffer& b) {
  std::vector<int32_t> s = b.to_ints();
  std::vector<uint32_t> v(s.size());
  std::memcpy(v.data(), s.data(), s.size() * 4);
  return v;
}

// One emulator for the file, so that a kernel run several times compiles once.
EmuResult run(const CudaSource& src, std::vector<HostBuffer>& bufs,
              const std::vector<ScalarArg>& scalars = {}) {
  static Emulator emu;
  EmuResult r = emu.run(src, bufs, scalars);
  INFO(r.message);
  return r;
}

// Without the sanitizer: for the tests that look at what racy or too-early reads see.
EmuResult run_unchecked(const CudaSource& src, std::vector<HostBuffer>& bufs,
                        const std::vector<ScalarArg>& scalars = {}) {
  static Emulator emu([] {
    EmulatorOptions o;
    o.racecheck = false;
    o.memcheck = false;
    return o;
  }());
  EmuResult r = emu.run(src, bufs, scalars);
  INFO(r.message);
  return r;
}

// ---- 16-bit floats, decoded from the format definitions and rounded by exhaustive search ----

double decode_f16(uint16_t h) {
  int e = h >> 10 & 0x1f, m = h & 0x3ff;
  double v = e == 31  ? (m != 0 ? NAN : INFINITY)
             : e == 0 ? std::ldexp(m, -24)
                      : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) != 0 ? -v : v;
}

double decode_bf16(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }

// The non-negative finite values of a format in increasing order, and the format's encodings.
struct Format {
  std::vector<double> values;
  std::vector<uint16_t> bits;
  double beyond;  // the next power of two past the largest finite value: rounds to infinity
  uint16_t inf;
};

Format make_format(double (*decode)(uint16_t), uint16_t largest, double beyond, uint16_t inf) {
  Format f{{}, {}, beyond, inf};
  for (uint32_t b = 0; b <= largest; ++b) {
    f.values.push_back(decode(static_cast<uint16_t>(b)));
    f.bits.push_back(static_cast<uint16_t>(b));
  }
  return f;
}

const Format& f16() {
  static const Format f = make_format(decode_f16, 0x7bff, 65536.0, 0x7c00);
  return f;
}
const Format& bf16() {
  static const Format f = make_format(decode_bf16, 0x7f7f, std::ldexp(1.0, 128), 0x7f80);
  return f;
}

// Round to nearest, ties to the even encoding; NaN gives any NaN (checked apart).
uint16_t round_to(const Format& f, double x) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double ax = std::fabs(x);
  if (ax >= f.beyond) return sign | f.inf;
  size_t hi = std::upper_bound(f.values.begin(), f.values.end(), ax) - f.values.begin();
  size_t lo = hi - 1;
  if (hi == f.values.size()) {  // between the largest finite value and `beyond`
    double below = ax - f.values[lo], above = f.beyond - ax;
    return sign | (above <= below ? f.inf : f.bits[lo]);  // the largest has an odd mantissa
  }
  double below = ax - f.values[lo], above = f.values[hi] - ax;
  if (below < above || (below == above && (f.bits[lo] & 1) == 0)) return sign | f.bits[lo];
  return sign | f.bits[hi];
}

bool is_nan(const Format& f, uint16_t b) {
  return (b & f.inf) == f.inf && (b & ~f.inf & 0x7fff) != 0;
}

TEST_CASE("f32 to f16/bf16 conversions and packs round to nearest even",
          "[emulator][tensor_core]") {
  std::vector<float> in = {0.0f,
                           -0.0f,
                           1.0f,
                           -1.0f,
                           65504.0f,
                           65519.996f,
                           65520.0f,
                           1e9f,
                           -65520.0f,
                           INFINITY,
                           -INFINITY,
                           NAN,
                           -NAN,
                           1.0f + 0x1p-11f,             // f16 tie, even below: 1.0
                           1.0f + 3 * 0x1p-11f,         // f16 tie, odd below: rounds up
                           1.0f + 0x1p-11f + 0x1p-20f,  // just above a tie
                           1.0f + 0x1p-8f,              // bf16 tie: 1.0 (truncation agrees)
                           1.0f + 3 * 0x1p-8f,          // bf16 tie, odd below: up
                           1.0f + 0x1p-8f + 0x1p-16f,   // bf16 above tie: truncation is wrong
                           0x1p-14f,
                           0x1p-15f,
                           0x1p-24f,
                           0x1p-25f,
                           0x1.8p-25f,
                           0x1.000002p-25f,
                           0x1.8p-24f,
                           0x1.4p-24f,
                           3 * 0x1p-26f,
                           0x1p-26f,
                           0x1.ff8p-15f,
                           0x1.ffcp-15f,
                           0x1p-130f,
                           0x1p-149f,
                           -0x1p-140f,
                           3.4e38f,
                           -3.39e38f};
  std::mt19937 rng(6);
  std::uniform_int_distribution<uint32_t> mantissa(0, 0x7fffff), exponent(95, 146), any;
  for (int i = 0; i < 3000; ++i) {
    uint32_t b = (any(rng) & 0x80000000u) | exponent(rng) << 23 | mantissa(rng);
    in.push_back(std::bit_cast<float>(b));
  }
  for (int i = 0; i < 1000; ++i) in.push_back(std::bit_cast<float>(any(rng)));
  const int n = static_cast<int>(in.size());
  std::vector<uint32_t> in_bits(n);
  for (int i = 0; i < n; ++i) in_bits[i] = std::bit_cast<uint32_t>(in[i]);

  CudaSource src = make_source(
      "convert",
      R"(extern "C" __global__ void convert(unsigned* out, float* widened, const unsigned* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const cutune_half h = (cutune_half)i;
  widened[2 * i] = cutune_f16_to_f32(h);
  widened[2 * i + 1] = cutune_bf16_to_f32((cutune_bf16)i);
  if (i >= n) return;
  const float x = __uint_as_float(in[i]);
  out[4 * i] = cutune_f32_to_f16(x);
  out[4 * i + 1] = cutune_f32_to_bf16(x);
  out[4 * i + 2] = cutune_pack_f16x2(x, -x);
  out[4 * i + 3] = cutune_pack_bf16x2(-x, x);
}
)",
      {word_param("out", 4 * n), buffer_param("widened", 2 * 65536), word_param("in", n, true),
       int_param("n")},
      Dim3{65536 / 256, 1, 1}, Dim3{256, 1, 1});
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::i32(), 4 * n),
                                  HostBuffer::zeros(ir::Type::f32(), 2 * 65536), words(in_bits)};
  REQUIRE(run(src, bufs, {ScalarArg::i32(n)}).status == EmuStatus::ok);

  std::vector<uint32_t> out = to_words(bufs[0]);
  auto check = [](const Format& f, float x, uint32_t got) {
    INFO("x = " << x << " (" << std::hexfloat << x << ") got 0x" << std::hex << got);
    if (std::isnan(x)) {
      REQUIRE(is_nan(f, static_cast<uint16_t>(got)));
    } else {
      REQUIRE(got == round_to(f, x));
    }
  };
  for (int i = 0; i < n; ++i) {
    check(f16(), in[i], out[4 * i]);
    check(bf16(), in[i], out[4 * i + 1]);
    check(f16(), in[i], out[4 * i + 2] & 0xffff);
    check(f16(), -in[i], out[4 * i + 2] >> 16);
    check(bf16(), -in[i], out[4 * i + 3] & 0xffff);
    check(bf16(), in[i], out[4 * i + 3] >> 16);
  }
  // Spot checks that pin the reference itself.
  REQUIRE(out[4 * 6] == 0x7c00);       // 65520 -> +Inf
  REQUIRE(out[4 * 5] == 0x7bff);       // just below 65520 -> 65504
  REQUIRE(out[4 * 18 + 1] == 0x3f81);  // rounded, not truncated (0x3f80)
  REQUIRE(out[4 * 21] == 0x0001);      // 2^-24, the smallest subnormal
  REQUIRE(out[4 * 22] == 0x0000);      // 2^-25: tie to even zero

  std::vector<float> widened = bufs[1].to_floats();
  for (uint32_t b = 0; b < 65536; ++b) {
    INFO("bits 0x" << std::hex << b);
    double want_h = decode_f16(static_cast<uint16_t>(b));
    double want_b = decode_bf16(static_cast<uint16_t>(b));
    if (std::isnan(want_h)) {
      REQUIRE(std::isnan(widened[2 * b]));
    } else {
      REQUIRE(widened[2 * b] == want_h);
      REQUIRE(std::signbit(widened[2 * b]) == std::signbit(want_h));
    }
    if (std::isnan(want_b)) {
      REQUIRE(std::isnan(widened[2 * b + 1]));
    } else {
      REQUIRE(widened[2 * b + 1] == want_b);
    }
  }
}

// ---- mma.m16n8k16: the PTX ISA's "Matrix Fragments for mma.m16n8k16 with floating point type"
// ----

struct RowCol {
  int row, col;
};
int group_id(int lane) { return lane >> 2; }
int thread_in_group(int lane) { return lane % 4; }

// A (16x16, .row): a0..a7, two per .b32 register.
RowCol a_element(int lane, int i) {
  int row = (i < 2 || (i >= 4 && i < 6)) ? group_id(lane) : group_id(lane) + 8;
  int col =
      i < 4 ? thread_in_group(lane) * 2 + (i & 0x1) : thread_in_group(lane) * 2 + (i & 0x1) + 8;
  return {row, col};
}
// B (16x8, .col): b0..b3, two per .b32 register.
RowCol b_element(int lane, int i) {
  int row =
      i < 2 ? thread_in_group(lane) * 2 + (i & 0x1) : thread_in_group(lane) * 2 + (i & 0x1) + 8;
  return {row, group_id(lane)};
}
// C and D (16x8, f32): c0..c3.
RowCol c_element(int lane, int i) {
  int row = i < 2 ? group_id(lane) : group_id(lane) + 8;
  return {row, thread_in_group(lane) * 2 + (i & 0x1)};
}

std::vector<int> shuffled(int first, int count, std::mt19937& rng) {
  std::vector<int> v(count);
  std::iota(v.begin(), v.end(), first);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

const char* kMmaLanes =
    R"(extern "C" __global__ void mma_lanes(float* d_out, const unsigned* a_frag, const unsigned* b_frag, const float* c_frag, int mode) {
  const int t = threadIdx.x;
  unsigned a[4];
  unsigned b[2];
  float c[4];
  float d[4];
  for (int r = 0; r < 4; ++r) {
    a[r] = a_frag[t * 4 + r];
    c[r] = c_frag[t * 4 + r];
  }
  b[0] = b_frag[t * 2];
  b[1] = b_frag[t * 2 + 1];
  float* dst = (mode & 2) ? c : d;
  if (mode & 1) {
    cutune_mma_m16n8k16_bf16(dst, a, b, c);
  } else {
    cutune_mma_m16n8k16_f16(dst, a, b, c);
  }
  for (int r = 0; r < 4; ++r) {
    d_out[t * 4 + r] = dst[r];
  }
}
)";

TEST_CASE("mma.m16n8k16 f16 and bf16 follow the ISA fragment layouts, two warps at once",
          "[emulator][tensor_core]") {
  constexpr int kWarps = 2;
  std::mt19937 rng(16);
  // Distinct integers: any lane or register mix-up changes some element of D. |a|,|b| <= 128
  // are exact in f16 and bf16, and every sum is exact in f32.
  std::vector<std::vector<int>> a(kWarps), b(kWarps), c(kWarps);
  std::vector<uint32_t> a_frag_h(kWarps * 32 * 4), a_frag_b(kWarps * 32 * 4);
  std::vector<uint32_t> b_frag_h(kWarps * 32 * 2), b_frag_b(kWarps * 32 * 2);
  std::vector<float> c_frag(kWarps * 32 * 4);
  for (int w = 0; w < kWarps; ++w) {
    a[w] = shuffled(-128, 256, rng);
    b[w] = shuffled(-64, 128, rng);
    c[w] = shuffled(1000 * (w + 1), 128, rng);
    for (int lane = 0; lane < 32; ++lane) {
      int t = w * 32 + lane;
      for (int i = 0; i < 8; ++i) {
        RowCol e = a_element(lane, i);
        double v = a[w][e.row * 16 + e.col];
        a_frag_h[t * 4 + i / 2] |= uint32_t{round_to(f16(), v)} << (16 * (i % 2));
        a_frag_b[t * 4 + i / 2] |= uint32_t{round_to(bf16(), v)} << (16 * (i % 2));
      }
      for (int i = 0; i < 4; ++i) {
        RowCol e = b_element(lane, i);
        double v = b[w][e.row * 8 + e.col];
        b_frag_h[t * 2 + i / 2] |= uint32_t{round_to(f16(), v)} << (16 * (i % 2));
        b_frag_b[t * 2 + i / 2] |= uint32_t{round_to(bf16(), v)} << (16 * (i % 2));
      }
      for (int i = 0; i < 4; ++i) {
        RowCol e = c_element(lane, i);
        c_frag[t * 4 + i] = static_cast<float>(c[w][e.row * 8 + e.col]);
      }
    }
  }
  CudaSource src =
      make_source("mma_lanes", kMmaLanes,
                  {buffer_param("d_out", kWarps * 128), word_param("a_frag", kWarps * 128, true),
                   word_param("b_frag", kWarps * 64, true),
                   buffer_param("c_frag", kWarps * 128, true), int_param("mode")},
                  Dim3{1, 1, 1}, Dim3{32 * kWarps, 1, 1});
  for (int mode = 0; mode < 4; ++mode) {
    bool is_bf16 = (mode & 1) != 0;
    INFO((is_bf16 ? "bf16" : "f16") << ((mode & 2) != 0 ? ", d aliasing c" : ""));
    std::vector<HostBuffer> bufs = {
        HostBuffer::zeros(ir::Type::f32(), kWarps * 128), words(is_bf16 ? a_frag_b : a_frag_h),
        words(is_bf16 ? b_frag_b : b_frag_h), HostBuffer::from_floats(c_frag)};
    REQUIRE(run(src, bufs, {ScalarArg::i32(mode)}).status == EmuStatus::ok);
    std::vector<float> d = bufs[0].to_floats();
    for (int w = 0; w < kWarps; ++w) {
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 4; ++i) {
          RowCol e = c_element(lane, i);
          int64_t want = c[w][e.row * 8 + e.col];
          for (int k = 0; k < 16; ++k) want += int64_t{a[w][e.row * 16 + k]} * b[w][k * 8 + e.col];
          INFO("warp " << w << " lane " << lane << " d" << i);
          REQUIRE(d[(w * 32 + lane) * 4 + i] == static_cast<float>(want));
        }
      }
    }
  }
}

TEST_CASE("an mma that half a warp skips, or that lanes reach at different calls, diverges",
          "[emulator][tensor_core]") {
  CudaSource src = make_source(
      "half_mma", R"(extern "C" __global__ void half_mma(float* out, int split_calls) {
  unsigned a[4] = {0u, 0u, 0u, 0u};
  unsigned b[2] = {0u, 0u};
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (threadIdx.x % 32 < 16) {
    cutune_mma_m16n8k16_f16(c, a, b, c);
  } else if (split_calls) {
    cutune_mma_m16n8k16_f16(c, a, b, c);
  }
  out[threadIdx.x] = c[0];
}
)",
      {buffer_param("out", 64), int_param("split_calls")}, Dim3{1, 1, 1}, Dim3{64, 1, 1});
  for (int split : {0, 1}) {
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 64)};
    EmuResult r = run(src, bufs, {ScalarArg::i32(split)});
    INFO(r.message);
    REQUIRE(r.status == EmuStatus::barrier_divergence);
    REQUIRE_THAT(r.message,
                 Contains("half_mma") && Contains("cutune_mma_m16n8k16_f16") && Contains("line 6"));
    REQUIRE_THAT(r.message, Contains(split != 0 ? "line 8" : "has exited"));
  }
}

// ---- ldmatrix: the PTX ISA's ldmatrix fragment for .m8n8 .b16 ----

TEST_CASE("ldmatrix x1/x2/x4 with and without .trans hands every lane its fragment",
          "[emulator][tensor_core]") {
  // 32 logical rows of 8 distinct halves; row r sits at shared row 31 - r, rows 48 bytes apart,
  // and lane l addresses logical row l. Lanes that give no row pass an address that would
  // crash if it were read.
  CudaSource src = make_source(
      "ldmatrix_lanes",
      R"(extern "C" __global__ void ldmatrix_lanes(unsigned* out, const unsigned* rows, int variant) {
  __shared__ __align__(16) cutune_half tile[32 * 24];
  const int lane = threadIdx.x;
  for (int c = 0; c < 8; ++c) {
    tile[(31 - lane) * 24 + c] = ((const cutune_half*)rows)[lane * 8 + c];
  }
  __syncthreads();
  unsigned r[4] = {0xdeadbeefu, 0xdeadbeefu, 0xdeadbeefu, 0xdeadbeefu};
  const int used = variant % 3 == 0 ? 8 : variant % 3 == 1 ? 16 : 32;
  const void* row = lane < used ? (const void*)&tile[(31 - lane) * 24] : (const void*)16;
  switch (variant) {
    case 0: cutune_ldmatrix_x1(r, row); break;
    case 1: cutune_ldmatrix_x2(r, row); break;
    case 2: cutune_ldmatrix_x4(r, row); break;
    case 3: cutune_ldmatrix_x1_trans(r, row); break;
    case 4: cutune_ldmatrix_x2_trans(r, row); break;
    case 5: cutune_ldmatrix_x4_trans(r, row); break;
  }
  for (int j = 0; j < 4; ++j) {
    out[lane * 4 + j] = r[j];
  }
}
)",
      {word_param("out", 128), word_param("rows", 128, true), int_param("variant")}, Dim3{1, 1, 1},
      Dim3{32, 1, 1});
  std::mt19937 rng(8);
  std::vector<int> values = shuffled(0x1000, 256, rng);
  auto element = [&](int matrix, int row,
                     int col) {  // row `row` of matrix `matrix`, as given by lane 8 * matrix + row
    return static_cast<uint32_t>(values[(8 * matrix + row) * 8 + col]);
  };
  std::vector<uint32_t> rows(128);
  for (int i = 0; i < 256; ++i) rows[i / 2] |= static_cast<uint32_t>(values[i]) << (16 * (i % 2));

  for (int variant = 0; variant < 6; ++variant) {
    const int matrices = variant % 3 == 0 ? 1 : variant % 3 == 1 ? 2 : 4;
    const bool trans = variant >= 3;
    INFO("x" << matrices << (trans ? ".trans" : ""));
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::i32(), 128), words(rows)};
    REQUIRE(run(src, bufs, {ScalarArg::i32(variant)}).status == EmuStatus::ok);
    std::vector<uint32_t> out = to_words(bufs[0]);
    for (int lane = 0; lane < 32; ++lane) {
      for (int j = 0; j < 4; ++j) {
        INFO("lane " << lane << " register " << j);
        uint32_t want = 0xdeadbeefu;
        if (j < matrices) {
          // Each lane holds row lane/4, columns 2 * (lane % 4) and the next; .trans delivers
          // the transposed matrix in the same layout.
          int row = lane / 4, col = 2 * (lane % 4);
          want = trans ? element(j, col, row) | element(j, col + 1, row) << 16
                       : element(j, row, col) | element(j, row, col + 1) << 16;
        }
        REQUIRE(out[lane * 4 + j] == want);
      }
    }
  }
}

// ---- cp.async ----

TEST_CASE("cp.async zero-fills past src_bytes and lands only when its group is waited for",
          "[emulator][tensor_core]") {
  CudaSource src = make_source(
      "cp_async_lanes",
      R"(extern "C" __global__ void cp_async_lanes(unsigned* before, unsigned* after, unsigned* groups, const unsigned* in) {
  __shared__ __align__(16) unsigned slot[9 * 4];
  __shared__ __align__(16) unsigned staged[4];
  const int t = threadIdx.x;
  if (t < 9) {
    const int size = t / 3 == 0 ? 4 : t / 3 == 1 ? 8 : 16;
    const int src_bytes = t % 3 == 0 ? 0 : t % 3 == 1 ? size / 2 + 1 : size;
    if (size == 4) cutune_cp_async_4(&slot[t * 4], &in[t * 4], src_bytes);
    if (size == 8) cutune_cp_async_8(&slot[t * 4], &in[t * 4], src_bytes);
    if (size == 16) cutune_cp_async_16(&slot[t * 4], &in[t * 4], src_bytes);
    cutune_cp_async_commit();
    for (int i = 0; i < 4; ++i) before[t * 4 + i] = slot[t * 4 + i];
    cutune_cp_async_wait_0();
    for (int i = 0; i < 4; ++i) after[t * 4 + i] = slot[t * 4 + i];
  }
  if (t == 9) {
    for (int g = 0; g < 3; ++g) {
      cutune_cp_async_4(&staged[g], &in[40 + g], 4);
      cutune_cp_async_commit();
    }
    cutune_cp_async_4(&staged[3], &in[43], 4);
    cutune_cp_async_wait_2();
    for (int i = 0; i < 4; ++i) groups[i] = staged[i];
    cutune_cp_async_wait_1();
    for (int i = 0; i < 4; ++i) groups[4 + i] = staged[i];
    cutune_cp_async_wait_0();
    for (int i = 0; i < 4; ++i) groups[8 + i] = staged[i];
    cutune_cp_async_commit();
    cutune_cp_async_wait_0();
    for (int i = 0; i < 4; ++i) groups[12 + i] = staged[i];
  }
}
)",
      {word_param("before", 36), word_param("after", 36), word_param("groups", 16),
       word_param("in", 48, true)},
      Dim3{1, 1, 1}, Dim3{32, 1, 1});
  std::vector<uint32_t> in(48);
  for (int i = 0; i < 48; ++i) in[i] = 0x01020304u * (i + 1);
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::i32(), 36),
                                  HostBuffer::zeros(ir::Type::i32(), 36),
                                  HostBuffer::zeros(ir::Type::i32(), 16), words(in)};
  // The reads before each wait are of shared memory no copy has landed in yet: the sanitizer
  // says so; without it they see the poison.
  EmuResult checked = run(src, bufs);
  REQUIRE(checked.status == EmuStatus::uninitialized_read);
  REQUIRE_THAT(checked.message, Contains("slot[0]") && Contains("thread (0,0,0) at line 12"));
  REQUIRE(run_unchecked(src, bufs).status == EmuStatus::ok);
  std::vector<uint32_t> before = to_words(bufs[0]), after = to_words(bufs[1]);
  auto byte_of = [](const std::vector<uint32_t>& v, int i) {
    return static_cast<uint8_t>(v[i / 4] >> (8 * (i % 4)));
  };
  for (int t = 0; t < 9; ++t) {
    int size = t / 3 == 0 ? 4 : t / 3 == 1 ? 8 : 16;
    int src_bytes = t % 3 == 0 ? 0 : t % 3 == 1 ? size / 2 + 1 : size;
    for (int i = 0; i < 16; ++i) {
      INFO("cp.async " << size << " src_bytes " << src_bytes << " byte " << i);
      REQUIRE(byte_of(before, t * 16 + i) == 0xff);  // the poison: nothing landed before the wait
      uint8_t want = i < src_bytes ? byte_of(in, t * 16 + i) : i < size ? 0 : 0xff;
      REQUIRE(byte_of(after, t * 16 + i) == want);
    }
  }
  const uint32_t p = 0xffffffffu;
  std::vector<uint32_t> want_groups = {
      in[40], p,      p,      p,        // wait_group 2
      in[40], in[41], p,      p,        // wait_group 1
      in[40], in[41], in[42], p,        // wait_group 0: not the uncommitted copy
      in[40], in[41], in[42], in[43]};  // after its commit
  REQUIRE(to_words(bufs[2]) == want_groups);
}

TEST_CASE("cp.async misuse: too many source bytes, a source past its buffer, misalignment",
          "[emulator][tensor_core]") {
  CudaSource src = make_source(
      "cp_async_misuse",
      R"(extern "C" __global__ void cp_async_misuse(unsigned* out, const unsigned* in, int mode) {
  __shared__ __align__(16) unsigned slot[4];
  if (mode == 0) cutune_cp_async_16(slot, in, 17);
  if (mode == 1) cutune_cp_async_16(slot, in + 16, 16);
  if (mode == 2) cutune_cp_async_16(slot, in + 12, 8);
  if (mode == 3) cutune_cp_async_16(slot, in + 14, 8);
  cutune_cp_async_commit();
  cutune_cp_async_wait_0();
  out[threadIdx.x] = slot[0];
}
)",
      {word_param("out", 32), word_param("in", 16, true), int_param("mode")}, Dim3{1, 1, 1},
      Dim3{32, 1, 1});
  auto run_mode = [&](int mode) {
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::i32(), 32),
                                    HostBuffer::zeros(ir::Type::i32(), 16)};
    return run(src, bufs, {ScalarArg::i32(mode)});
  };
  auto run_mode_unchecked = [&](int mode) {
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::i32(), 32),
                                    HostBuffer::zeros(ir::Type::i32(), 16)};
    return run_unchecked(src, bufs, {ScalarArg::i32(mode)});
  };
  EmuResult r0 = run_mode(0);
  REQUIRE(r0.status == EmuStatus::crashed);
  REQUIRE_THAT(r0.message, Contains("src_bytes") && Contains("thread (0,0,0)"));
  EmuResult r1 = run_mode(1);
  INFO(r1.message);
  REQUIRE(r1.status == EmuStatus::out_of_bounds);
  REQUIRE_THAT(r1.message, Contains("in[16]"));
  // A partial source that stays inside; every thread copies into the same slot, which the
  // sanitizer reports as the race it is.
  REQUIRE(run_mode_unchecked(2).status == EmuStatus::ok);
  EmuResult r2 = run_mode(2);
  REQUIRE(r2.status == EmuStatus::race);
  REQUIRE_THAT(r2.message, Contains("slot[0]") && Contains("written by the cp.async") &&
                               Contains("thread (1,0,0) at line 5") &&
                               Contains("thread (0,0,0) at line 5"));
  EmuResult r3 = run_mode(3);
  REQUIRE(r3.status == EmuStatus::crashed);
  REQUIRE_THAT(r3.message, Contains("not aligned"));
}

// ---- __syncwarp and shuffles (CUDA C++ Programming Guide, "Warp Shuffle Functions") ----

TEST_CASE("__syncwarp orders a warp's shared-memory writes and reads, shuffles move lanes' values",
          "[emulator][tensor_core]") {
  CudaSource src = make_source(
      "warp_ops", R"(extern "C" __global__ void warp_ops(int* ints, float* floats, int mode) {
  __shared__ int seen[64];
  const int t = threadIdx.x;
  const int lane = t % 32;
  const int w = t / 32;
  if (mode < 2) {
    seen[t] = t * 3;
    if (mode == 1) __syncwarp();
    ints[t] = seen[w * 32 + (lane + 1) % 32];
    return;
  }
  if (mode == 2) {
    const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    seen[t] = t * 5;
    __syncwarp(half);
    ints[t] = seen[w * 32 + (lane & 16) + (lane + 1) % 16];
    return;
  }
  const int iv = lane * lane + w * 1000;
  const float fv = lane * 1.5f + w * 100.0f;
  int k = 0;
  for (int width = 32; width >= 8; width /= 4) {
    ints[t * 8 + k] = __shfl_sync(0xffffffffu, iv, lane * 7 + 3, width);
    floats[t * 8 + k++] = __shfl_sync(0xffffffffu, fv, lane * 7 + 3, width);
    ints[t * 8 + k] = __shfl_down_sync(0xffffffffu, iv, 3, width);
    floats[t * 8 + k++] = __shfl_down_sync(0xffffffffu, fv, 3, width);
    ints[t * 8 + k] = __shfl_xor_sync(0xffffffffu, iv, 5 + 8, width);
    floats[t * 8 + k++] = __shfl_xor_sync(0xffffffffu, fv, 5 + 8, width);
  }
  int sum = iv;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  ints[t * 8 + 6] = __shfl_sync(0xffffffffu, sum, 0);
}
)",
      {word_param("ints", 64 * 8), buffer_param("floats", 64 * 8), int_param("mode")},
      Dim3{1, 1, 1}, Dim3{64, 1, 1});
  auto run_mode = [&](int mode) {
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::i32(), 64 * 8),
                                    HostBuffer::zeros(ir::Type::f32(), 64 * 8)};
    EmuResult r = mode == 0 ? run_unchecked(src, bufs, {ScalarArg::i32(mode)})
                            : run(src, bufs, {ScalarArg::i32(mode)});
    REQUIRE(r.status == EmuStatus::ok);
    return std::pair(bufs[0].to_ints(), bufs[1].to_floats());
  };
  // Without __syncwarp lane 0 runs to its read before lane 1 has written: the poison shows,
  // and the sanitizer reports the race (lane 1's write comes after lane 0's read).
  REQUIRE(run_mode(0).first[0] == -1);
  {
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::i32(), 64 * 8),
                                    HostBuffer::zeros(ir::Type::f32(), 64 * 8)};
    EmuResult r = run(src, bufs, {ScalarArg::i32(0)});
    REQUIRE(r.status == EmuStatus::race);
    REQUIRE_THAT(r.message, Contains("seen[1]") &&
                                Contains("written by thread (1,0,0) at line 7") &&
                                Contains("read by thread (0,0,0) at line 9"));
  }
  std::vector<int32_t> synced = run_mode(1).first;
  std::vector<int32_t> halves = run_mode(2).first;
  for (int t = 0; t < 64; ++t) {
    int lane = t % 32, w = t / 32;
    REQUIRE(synced[t] == (w * 32 + (lane + 1) % 32) * 3);
    REQUIRE(halves[t] == (w * 32 + (lane & 16) + (lane + 1) % 16) * 5);
  }

  auto [ints, floats] = run_mode(3);
  for (int t = 0; t < 64; ++t) {
    int lane = t % 32, w = t / 32;
    auto iv = [&](int l) { return l * l + w * 1000; };
    auto fv = [&](int l) { return l * 1.5f + w * 100.0f; };
    int k = 0;
    for (int width = 32; width >= 8; width /= 4) {
      int group = lane / width * width;
      int idx = group + (lane * 7 + 3) % width;
      int down = lane % width + 3 < width ? lane + 3 : lane;
      int x = lane ^ 13;
      int bfly = x / width > lane / width ? lane : x;  // a later group gives the own value
      for (int src : {idx, down, bfly}) {
        INFO("thread " << t << " width " << width << " op " << k % 3);
        REQUIRE(ints[t * 8 + k] == iv(src));
        REQUIRE(floats[t * 8 + k] == fv(src));
        ++k;
      }
    }
    REQUIRE(ints[t * 8 + 6] == 32 * w * 1000 + 31 * 32 * 63 / 6);
  }
}

TEST_CASE("cutune_warp_uniform passes a uniform value and reports one that is not",
          "[emulator][tensor_core]") {
  CudaSource src =
      make_source("uniform", R"(extern "C" __global__ void uniform(int* ints, int divisor) {
  const int t = threadIdx.x;
  ints[t] = cutune_warp_uniform(t / divisor);
}
)",
                  {word_param("ints", 256), int_param("divisor")}, Dim3{1, 1, 1}, Dim3{256, 1, 1});
  for (int divisor : {32, 128}) {
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::i32(), 256)};
    EmuResult r = run(src, bufs, {ScalarArg::i32(divisor)});
    REQUIRE(r.status == EmuStatus::ok);
    std::vector<int32_t> out = bufs[0].to_ints();
    for (int t = 0; t < 256; ++t) REQUIRE(out[t] == t / divisor);
  }
  // Half a warp's index differs from the other half's: on a GPU the broadcast would hand
  // lanes 16-31 lane 0's value, so the emulator fails the run instead of agreeing with it.
  std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::i32(), 256)};
  EmuResult r = run(src, bufs, {ScalarArg::i32(16)});
  REQUIRE(r.status == EmuStatus::crashed);
  CHECK_THAT(r.message, Contains("warp 0: cutune_warp_uniform on line 3") &&
                            Contains("the value is not uniform"));
}

// ---- a whole tile: cp.async -> shared -> ldmatrix -> mma -> global ----

TEST_CASE("a 16x8x16 tile GEMM via cp.async, ldmatrix and mma matches the CPU",
          "[emulator][tensor_core]") {
  CudaSource src = make_source("tile_gemm", R"(typedef unsigned short cutune_half;
extern "C" __global__ void __launch_bounds__(32) tile_gemm(float* __restrict__ C, const unsigned* __restrict__ A, const unsigned* __restrict__ B, int bf16) {
  __shared__ __align__(16) cutune_half A_shared[16 * 16];
  __shared__ __align__(16) cutune_half B_shared[16 * 8];
  const int lane = threadIdx.x;
  cutune_cp_async_16(&A_shared[lane * 8], &A[lane * 4], 16);
  if (lane < 16) cutune_cp_async_16(&B_shared[lane * 8], &B[lane * 4], 16);
  cutune_cp_async_commit();
  cutune_cp_async_wait_0();
  __syncthreads();
  unsigned a[4];
  unsigned b[2];
  cutune_ldmatrix_x4(a, &A_shared[(lane % 16) * 16 + (lane / 16) * 8]);
  cutune_ldmatrix_x2_trans(b, &B_shared[(lane % 16) * 8]);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (bf16) {
    cutune_mma_m16n8k16_bf16(acc, a, b, acc);
  } else {
    cutune_mma_m16n8k16_f16(acc, a, b, acc);
  }
  const int g = lane / 4;
  const int t = lane % 4;
  C[g * 8 + 2 * t] = acc[0];
  C[g * 8 + 2 * t + 1] = acc[1];
  C[(g + 8) * 8 + 2 * t] = acc[2];
  C[(g + 8) * 8 + 2 * t + 1] = acc[3];
}
)",
                               {buffer_param("C", 128), word_param("A", 128, true),
                                word_param("B", 64, true), int_param("bf16")},
                               Dim3{1, 1, 1}, Dim3{32, 1, 1});
  // Multiples of 1/64 in [-2, 2): exact in f16 and bf16, and every product and sum is exact
  // in f32, so the comparison is exact whatever the order of the sums.
  std::mt19937 rng(1688);
  std::uniform_int_distribution<int> dist(-128, 127);
  std::vector<double> a(16 * 16), b(16 * 8);
  for (double& x : a) x = dist(rng) / 64.0;
  for (double& x : b) x = dist(rng) / 64.0;
  for (int is_bf16 : {0, 1}) {
    const Format& f = is_bf16 != 0 ? bf16() : f16();
    std::vector<uint32_t> a_bits(128), b_bits(64);
    for (int i = 0; i < 256; ++i) a_bits[i / 2] |= uint32_t{round_to(f, a[i])} << (16 * (i % 2));
    for (int i = 0; i < 128; ++i) b_bits[i / 2] |= uint32_t{round_to(f, b[i])} << (16 * (i % 2));
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 128), words(a_bits),
                                    words(b_bits)};
    REQUIRE(run(src, bufs, {ScalarArg::i32(is_bf16)}).status == EmuStatus::ok);
    std::vector<float> c = bufs[0].to_floats();
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) {
        double want = 0;
        for (int k = 0; k < 16; ++k) want += a[m * 16 + k] * b[k * 8 + n];
        INFO((is_bf16 != 0 ? "bf16" : "f16") << " C[" << m << "][" << n << "]");
        REQUIRE(c[m * 8 + n] == want);
      }
    }
  }
}

}  // namespace
}  // namespace cutune::emu
