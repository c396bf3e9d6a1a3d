// The fp8 conversions of src/ir/fp8.h against two references: every code decoded by the
// formula of its format (std::ldexp), and encodings compared bit for bit with NVIDIA's own
// host conversions of cuda_fp8.h (a test-only oracle; cutune does not use them) at every code,
// every midpoint between neighbours and the floats just beside it, past the largest finite
// values, at infinities and NaN, and at a million random floats of every relevant exponent.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include <catch2/catch.hpp>
#include <cuda_fp8.h>

#include "src/ir/fp8.h"

namespace {

struct Case {
  const char* name;
  CutuneFp8Format fmt;
  __nv_fp8_interpretation_t oracle;
  int exponent_bits;
};
const Case kCases[] = {{"e4m3", kCutuneE4M3, __NV_E4M3, 4}, {"e5m2", kCutuneE5M2, __NV_E5M2, 5}};

// The value of `code` by the format's definition.
double defined_value(unsigned code, const Case& c) {
  const int m_bits = c.fmt.mantissa_bits, bias = c.fmt.bias;
  const int e = (code >> m_bits) & ((1 << c.exponent_bits) - 1);
  const int m = code & ((1 << m_bits) - 1);
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  const int top = (1 << c.exponent_bits) - 1;
  if (c.fmt.ieee_specials && e == top)
    return m == 0 ? sign * std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  if (!c.fmt.ieee_specials && e == top && m == (1 << m_bits) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(m, 1 - bias - m_bits);
  return sign * std::ldexp((1 << m_bits) + m, e - bias - m_bits);
}

unsigned oracle(float x, const Case& c, bool saturate) {
  return __nv_cvt_float_to_fp8(x, saturate ? __NV_SATFINITE : __NV_NOSAT, c.oracle);
}

unsigned ours(float x, const Case& c, bool saturate) {
  return cutune_f32_to_fp8(x, c.fmt, saturate);
}

}  // namespace

TEST_CASE("fp8: every code decodes to its format's value", "[fp8]") {
  for (const Case& c : kCases) {
    for (unsigned code = 0; code < 256; ++code) {
      INFO(c.name << " code 0x" << std::hex << code);
      const double want = defined_value(code, c);
      const float got = cutune_fp8_to_f32(static_cast<unsigned char>(code), c.fmt);
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
      } else {
        CHECK(static_cast<double>(got) == want);
        CHECK(std::signbit(got) == ((code & 0x80) != 0));
      }
    }
  }
  CHECK(cutune_fp8_to_f32(0x7e, kCutuneE4M3) == 448.0f);
  CHECK(cutune_fp8_to_f32(0x7b, kCutuneE5M2) == 57344.0f);
  CHECK(cutune_fp8_to_f32(0x01, kCutuneE4M3) == std::ldexp(1.0f, -9));
  CHECK(cutune_fp8_to_f32(0x01, kCutuneE5M2) == std::ldexp(1.0f, -16));
}

TEST_CASE("fp8: encoding matches NVIDIA's at codes, midpoints and beside them", "[fp8]") {
  for (const Case& c : kCases) {
    for (bool saturate : {false, true}) {
      int checked = 0;
      for (unsigned code = 0; code < 256; ++code) {
        const float v = cutune_fp8_to_f32(static_cast<unsigned char>(code), c.fmt);
        if (std::isnan(v) || std::isinf(v)) continue;
        // The next code away from zero (its value, or past the top: one more step).
        const float next = cutune_fp8_to_f32(static_cast<unsigned char>(code + 1), c.fmt);
        const float step = (std::isnan(next) || std::isinf(next) || (code & 0x7f) == 0x7f)
                               ? v - cutune_fp8_to_f32(static_cast<unsigned char>(code - 1), c.fmt)
                               : next - v;
        const float mid = v + step / 2;
        for (float x : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 2 * mid),
                        v + step, v + 2 * step}) {
          INFO(c.name << (saturate ? " satfinite" : " nosat") << " x = " << x);
          CHECK(ours(x, c, saturate) == oracle(x, c, saturate));
          ++checked;
        }
      }
      CHECK(checked > 1000);
      for (float x : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN(), 1e30f, -1e30f, 0.0f, -0.0f,
                      std::numeric_limits<float>::denorm_min(), 1e-30f, -1e-30f}) {
        INFO(c.name << (saturate ? " satfinite" : " nosat") << " x = " << x);
        CHECK(ours(x, c, saturate) == oracle(x, c, saturate));
      }
    }
  }
  // The rules, spelled out: e4m3 rounds 464 (a tie) to 448 and overflows just above it.
  CHECK(ours(464.0f, kCases[0], false) == 0x7e);
  CHECK(ours(464.5f, kCases[0], false) == 0x7f);
  CHECK(ours(464.5f, kCases[0], true) == 0x7e);
  CHECK(ours(-1e9f, kCases[1], false) == 0xfc);  // e5m2: -infinity
  CHECK(ours(-1e9f, kCases[1], true) == 0xfb);   // -57344
}

TEST_CASE("fp8: a million random floats encode as NVIDIA's do", "[fp8]") {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-28, 18);
  for (const Case& c : kCases) {
    for (bool saturate : {false, true}) {
      int mismatches = 0;
      for (int i = 0; i < 250000; ++i) {
        const float x = std::ldexp(mantissa(rng), exponent(rng)) * ((i & 1) ? -1.0f : 1.0f);
        if (ours(x, c, saturate) != oracle(x, c, saturate) && ++mismatches <= 3)
          FAIL_CHECK(c.name << " x = " << x << ": 0x" << std::hex << ours(x, c, saturate)
                            << " against 0x" << oracle(x, c, saturate));
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("fp8: every finite code survives a round trip through fp32", "[fp8]") {
  for (const Case& c : kCases) {
    for (unsigned code = 0; code < 256; ++code) {
      const float v = cutune_fp8_to_f32(static_cast<unsigned char>(code), c.fmt);
      if (std::isnan(v)) continue;
      INFO(c.name << " code 0x" << std::hex << code);
      CHECK(cutune_f32_to_fp8(v, c.fmt, false) == code);
    }
  }
}
