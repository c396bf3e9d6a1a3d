#include "src/measure/correctness.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace cutune {

namespace {

// SplitMix64: a counter-based generator, identical everywhere.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<float> fill_input(uint64_t seed, int tensor_index, int64_t elements) {
  std::vector<float> values(static_cast<size_t>(std::max<int64_t>(elements, 0)));
  const uint64_t base = mix(seed ^ (uint64_t(tensor_index) * 0x632be59bd9b4e019ull));
  for (size_t i = 0; i < values.size(); ++i) {
    // 24 random bits -> [0, 1) exactly representable in float, then to [-1, 1).
    const uint64_t r = mix(base + i) >> 40;
    values[i] = static_cast<float>(double(r) * (2.0 / 16777216.0) - 1.0);
  }
  return values;
}

double error_tolerance(const std::string& dtype, int64_t reduction_length) {
  double unit_roundoff;
  if (dtype == "float32") unit_roundoff = 0x1p-24;
  else if (dtype == "float16") unit_roundoff = 0x1p-11;
  else if (dtype == "bfloat16") unit_roundoff = 0x1p-8;
  else throw std::invalid_argument(fmt::format("no tolerance for dtype '{}' (known: float32, float16, bfloat16)", dtype));
  const double n = double(std::max<int64_t>(reduction_length, 1));
  // 64 u sqrt(n): ~10x above the largest error a correct fp32 kernel summing in another order
  // shows against cuBLAS on uniform inputs, and ~1000x below what an indexing bug produces.
  return std::max(64.0 * unit_roundoff * std::sqrt(n), 16.0 * unit_roundoff);
}

std::string CompareResult::describe(double tolerance) const {
  if (nonfinite > 0)
    return fmt::format("{} NaN/Inf output(s), first at [{}]", nonfinite, worst_index);
  return fmt::format("max rel error {:.3g} (tolerance {:.3g}) at [{}]: got {}, expected {}",
                     max_rel_error, tolerance, worst_index, worst_actual, worst_expected);
}

CompareResult compare_outputs(const float* actual, const float* expected, int64_t elements) {
  CompareResult r;
  double sum_sq = 0;
  for (int64_t i = 0; i < elements; ++i)
    if (std::isfinite(expected[i])) sum_sq += double(expected[i]) * expected[i];
  const double rms = elements > 0 ? std::sqrt(sum_sq / double(elements)) : 0.0;
  const double floor = rms > 0 ? rms : 1.0;
  for (int64_t i = 0; i < elements; ++i) {
    const double a = actual[i], e = expected[i];
    if (!std::isfinite(a) && std::isfinite(e)) {
      if (r.nonfinite++ == 0) {
        r.worst_index = i;
        r.worst_actual = actual[i];
        r.worst_expected = expected[i];
      }
      r.max_rel_error = std::numeric_limits<double>::infinity();
      continue;
    }
    if (!std::isfinite(e)) continue;  // a reference that overflowed checks nothing here
    const double err = std::abs(a - e) / std::max(std::abs(e), floor);
    if (err > r.max_rel_error) {
      r.max_rel_error = err;
      r.worst_index = i;
      r.worst_actual = actual[i];
      r.worst_expected = expected[i];
    }
  }
  return r;
}

}  // namespace cutune
