#pragma once
// Integer division rounding toward negative infinity, as the IR's Div and Mod mean it (C++'s
// `/` rounds toward zero).

#include <cstdint>

namespace cutune {

// b != 0.
inline int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// b != 0; the result has b's sign (or is 0).
inline int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

}  // namespace cutune
