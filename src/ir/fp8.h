#pragma once
// The two 8-bit floats of Hopper's fp8 tensor cores (the OCP 8-bit formats): conversions from
// and to fp32, exact, for the reference and the emulator, so that a tuned fp8 kernel is checked
// against the same numbers the GPU computes. One text for host code and the emulator's device
// prelude, like wgmma_descriptor.h: it includes nothing and uses only plain C++.
//
//   e4m3: sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities: S.1111.111 is NaN,
//         the largest finite value is 448 (S.1111.110); subnormals are m * 2^-9.
//   e5m2: sign, 5 exponent bits (bias 15), 2 mantissa bits, as IEEE binary16's upper byte:
//         infinities S.11111.00, NaN S.11111.xx (xx != 0), largest finite 57344; subnormals
//         m * 2^-16.
// fp32 -> fp8 rounds to nearest, ties to even. Out of range, with `saturate` (PTX's
// cvt.rn.satfinite, the only form the hardware has for e4m3) a finite value or an infinity
// becomes the largest finite value of its sign; without it, e4m3 gives the NaN of its sign and
// e5m2 an infinity. A NaN input gives NaN 0x7f (its sign dropped).

inline constexpr unsigned cutune_fp8_float_bits(float f) { return __builtin_bit_cast(unsigned, f); }
inline constexpr float cutune_fp8_bits_float(unsigned u) { return __builtin_bit_cast(float, u); }

// The format's shape: mantissa bits, exponent bias, the code of its largest finite magnitude,
// and whether the all-ones exponent holds infinities and NaNs (e5m2) or values (e4m3).
struct CutuneFp8Format {
  int mantissa_bits, bias;
  unsigned max_finite, nan;
  bool ieee_specials;
};
inline constexpr CutuneFp8Format kCutuneE4M3 = {3, 7, 0x7eu, 0x7fu, false};
inline constexpr CutuneFp8Format kCutuneE5M2 = {2, 15, 0x7bu, 0x7fu, true};

inline constexpr float cutune_fp8_to_f32(unsigned char code, CutuneFp8Format fmt) {
  const unsigned sign = (unsigned)(code & 0x80u) << 24;
  const unsigned magnitude = code & 0x7fu;
  const unsigned exponent = magnitude >> fmt.mantissa_bits;
  const unsigned mantissa = magnitude & ((1u << fmt.mantissa_bits) - 1u);
  const unsigned top = (1u << (7 - fmt.mantissa_bits)) - 1u;  // the all-ones exponent
  if (fmt.ieee_specials && exponent == top)
    return cutune_fp8_bits_float(mantissa == 0 ? sign | 0x7f800000u : 0x7fffffffu);
  if (!fmt.ieee_specials && magnitude == fmt.nan) return cutune_fp8_bits_float(0x7fffffffu);
  if (exponent == 0) {  // subnormal: mantissa units of 2^(1 - bias - mantissa bits)
    const float unit = cutune_fp8_bits_float((unsigned)(127 + 1 - fmt.bias - fmt.mantissa_bits) << 23);
    return cutune_fp8_bits_float(sign | cutune_fp8_float_bits((float)mantissa * unit));
  }
  return cutune_fp8_bits_float(sign | (exponent + 127u - (unsigned)fmt.bias) << 23 |
                               mantissa << (23 - fmt.mantissa_bits));
}

inline constexpr unsigned char cutune_f32_to_fp8(float value, CutuneFp8Format fmt, bool saturate) {
  const unsigned x = cutune_fp8_float_bits(value);
  const unsigned sign = (x >> 24) & 0x80u;
  const unsigned ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (unsigned char)fmt.nan;
  const unsigned overflow =
      saturate ? sign | fmt.max_finite : fmt.ieee_specials ? sign | (fmt.max_finite + 1u) : sign | fmt.nan;
  if (ax == 0x7f800000u) return (unsigned char)overflow;
  const int shift = 23 - fmt.mantissa_bits;  // fp32 mantissa bits dropped
  const int exponent = (int)(ax >> 23) - 127;
  if (exponent >= 1 - fmt.bias) {  // normal in fp8 (or overflowing)
    // Round the magnitude at the kept bits (a carry moves into the exponent), then rebias.
    const unsigned rounded = ax + ((1u << (shift - 1)) - 1u) + ((ax >> shift) & 1u);
    const unsigned code = (rounded >> shift) - ((unsigned)(127 - fmt.bias) << fmt.mantissa_bits);
    if ((rounded >> shift) > ((unsigned)(127 - fmt.bias) << fmt.mantissa_bits) + fmt.max_finite)
      return (unsigned char)overflow;
    return (unsigned char)(sign | code);
  }
  // Subnormal (or zero): the value in units of 2^(1 - bias - mantissa bits), rounded.
  const int right = 24 - fmt.bias - fmt.mantissa_bits - exponent;
  if (ax < 0x00800000u || right > 24) return (unsigned char)sign;  // below half a unit
  const unsigned significand = (ax & 0x7fffffu) | 0x800000u;
  unsigned units = significand >> right;
  const unsigned rest = significand & ((1u << right) - 1u);
  const unsigned half = 1u << (right - 1);
  if (rest > half || (rest == half && (units & 1u) != 0)) ++units;
  return (unsigned char)(sign | units);  // 1 << mantissa bits is the smallest normal's code
}
