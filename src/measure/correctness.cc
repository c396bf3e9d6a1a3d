#include "src/measure/correctness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace cutune {

namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round-to-nearest-even float -> bfloat16 bits (NaN stays a quiet NaN).
uint16_t to_bf16(float f) {
  uint32_t u = float_bits(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

// Round-to-nearest-even float -> IEEE binary16 bits, with subnormals and overflow to inf.
uint16_t to_f16(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffff;
  if (abs >= 0x7f800000) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));
  if (abs >= 0x477ff000) return uint16_t(sign | 0x7c00);  // rounds past 65504
  int exp = int(abs >> 23) - 127;
  uint32_t mant = (abs & 0x7fffff) | 0x800000;
  int shift = exp >= -14 ? 13 : 13 + (-14 - exp);  // normal, or subnormal with extra shift
  if (shift > 24) return sign;
  uint32_t half = mant >> shift;
  uint32_t rest = mant & ((1u << shift) - 1);
  uint32_t mid = 1u << (shift - 1);
  if (rest > mid || (rest == mid && (half & 1))) ++half;
  if (exp >= -14) {
    // half includes the implicit bit; a carry out of the mantissa bumps the exponent.
    return uint16_t(sign | ((uint32_t(exp + 15) << 10) + (half - 0x400)));
  }
  return uint16_t(sign | half);
}

float from_f16(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) return (h & 0x8000 ? -1.0f : 1.0f) * std::ldexp(float(mant), -24);
  if (exp == 31) return bits_float(sign | 0x7f800000 | (mant << 13));
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

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

double error_tolerance(const std::string& output_dtype, int64_t reduction_length) {
  const double u32 = 0x1p-24;
  double output_roundoff;
  if (output_dtype == "float32")
    output_roundoff = 0;
  else if (output_dtype == "float16")
    output_roundoff = 0x1p-11;
  else if (output_dtype == "bfloat16")
    output_roundoff = 0x1p-8;
  else
    throw std::invalid_argument(fmt::format(
        "no tolerance for dtype '{}' (known: float32, float16, bfloat16)", output_dtype));
  const double n = double(std::max<int64_t>(reduction_length, 1));
  return std::max(64.0 * u32 * std::sqrt(n), 16.0 * u32) + 2.0 * output_roundoff;
}

std::string storage_dtype(ir::DType dtype) {
  if (dtype != ir::DType::Float32 && dtype != ir::DType::Float16 && dtype != ir::DType::BFloat16)
    throw std::invalid_argument("tensors are stored as float32, float16 or bfloat16");
  return ir::dtype_name(dtype);
}

uint16_t half_bits(float value) { return to_f16(value); }
float half_value(uint16_t bits) { return from_f16(bits); }
uint16_t bfloat16_bits(float value) { return to_bf16(value); }
float bfloat16_value(uint16_t bits) { return bits_float(uint32_t(bits) << 16); }

namespace {

// The element types besides the floating three, with their widths.
constexpr std::pair<const char*, int64_t> kOtherTypes[] = {
    {"float64", 8}, {"int8", 1},  {"int16", 2},  {"int32", 4}, {"int64", 8},
    {"uint8", 1},   {"uint16", 2}, {"uint32", 4}, {"uint64", 8}};

template <class T>
void widen(const char* bytes, std::vector<float>& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, bytes + i * sizeof(T), sizeof(T));
    out[i] = float(v);
  }
}

bool is_storage(const std::string& dtype) {
  return dtype == "float32" || dtype == "float16" || dtype == "bfloat16";
}

void require_storage(const std::string& dtype) {
  if (!is_storage(dtype))
    throw std::invalid_argument(fmt::format(
        "'{}' is not a storage type of generated values (float32, float16, bfloat16)", dtype));
}

}  // namespace

int64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "float32") return 4;
  if (dtype == "float16" || dtype == "bfloat16") return 2;
  for (const auto& [name, width] : kOtherTypes)
    if (dtype == name) return width;
  throw std::invalid_argument(fmt::format(
      "unknown element type '{}' (known: float32, float16, bfloat16, float64, int8 ... int64, "
      "uint8 ... uint64)",
      dtype));
}

float round_to_storage(float value, const std::string& dtype) {
  if (dtype == "float16") return from_f16(to_f16(value));
  if (dtype == "bfloat16") return bits_float(uint32_t(to_bf16(value)) << 16);
  require_storage(dtype);
  return value;
}

std::vector<float> input_values(uint64_t seed, int tensor_index, int64_t elements,
                                const std::string& dtype) {
  std::vector<float> values = fill_input(seed, tensor_index, elements);
  if (dtype != "float32")
    for (float& v : values) v = round_to_storage(v, dtype);
  return values;
}

std::vector<char> encode_values(const std::vector<float>& values, const std::string& dtype) {
  require_storage(dtype);
  const int64_t width = dtype_bytes(dtype);
  std::vector<char> bytes(values.size() * size_t(width));
  for (size_t i = 0; i < values.size(); ++i) {
    if (width == 4) {
      std::memcpy(&bytes[i * 4], &values[i], 4);
      continue;
    }
    const uint16_t b = dtype == "float16" ? to_f16(values[i]) : to_bf16(values[i]);
    std::memcpy(&bytes[i * 2], &b, 2);
  }
  return bytes;
}

std::vector<float> decode_values(const char* bytes, int64_t elements, const std::string& dtype) {
  const int64_t width = dtype_bytes(dtype);
  std::vector<float> values(size_t(std::max<int64_t>(elements, 0)));
  if (dtype == "float64") widen<double>(bytes, values);
  else if (dtype == "int8") widen<int8_t>(bytes, values);
  else if (dtype == "int16") widen<int16_t>(bytes, values);
  else if (dtype == "int32") widen<int32_t>(bytes, values);
  else if (dtype == "int64") widen<int64_t>(bytes, values);
  else if (dtype == "uint8") widen<uint8_t>(bytes, values);
  else if (dtype == "uint16") widen<uint16_t>(bytes, values);
  else if (dtype == "uint32") widen<uint32_t>(bytes, values);
  else if (dtype == "uint64") widen<uint64_t>(bytes, values);
  if (!is_storage(dtype)) return values;
  if (width == 4) {
    if (!values.empty()) std::memcpy(values.data(), bytes, values.size() * 4);
    return values;
  }
  const bool half = dtype == "float16";
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t b;
    std::memcpy(&b, bytes + i * 2, 2);
    values[i] = half ? from_f16(b) : bits_float(uint32_t(b) << 16);
  }
  return values;
}

std::string CompareResult::describe(double tolerance) const {
  if (nonfinite > 0)
    return fmt::format("{} NaN/Inf output(s), first at [{}]", nonfinite, worst_index);
  return fmt::format("max rel error {:.3g} (tolerance {:.3g}) at [{}]: got {}, expected {}",
                     max_rel_error, tolerance, worst_index, worst_actual, worst_expected);
}

double compare_scale(const float* expected, int64_t elements) {
  double sum_sq = 0;
  for (int64_t i = 0; i < elements; ++i)
    if (std::isfinite(expected[i])) sum_sq += double(expected[i]) * expected[i];
  const double rms = elements > 0 ? std::sqrt(sum_sq / double(elements)) : 0.0;
  return rms > 0 ? rms : 1.0;
}

CompareResult compare_outputs(const float* actual, const float* expected, int64_t elements,
                              double scale, int64_t first_index) {
  CompareResult r;
  for (int64_t i = 0; i < elements; ++i) {
    const double a = actual[i], e = expected[i];
    if (!std::isfinite(a) && std::isfinite(e)) {
      if (r.nonfinite++ == 0) {
        r.worst_index = first_index + i;
        r.worst_actual = actual[i];
        r.worst_expected = expected[i];
      }
      r.max_rel_error = std::numeric_limits<double>::infinity();
      continue;
    }
    if (!std::isfinite(e)) continue;  // a reference that overflowed checks nothing here
    const double err = std::abs(a - e) / std::max(std::abs(e), scale);
    if (err > r.max_rel_error) {
      r.max_rel_error = err;
      r.worst_index = first_index + i;
      r.worst_actual = actual[i];
      r.worst_expected = expected[i];
    }
  }
  return r;
}

CompareResult compare_outputs(const float* actual, const float* expected, int64_t elements) {
  return compare_outputs(actual, expected, elements, compare_scale(expected, elements));
}

CompareResult compare_stored(const char* actual_bytes, const std::string& dtype,
                             const float* expected, int64_t elements, double scale, int threads) {
  const int64_t width = dtype_bytes(dtype);
  constexpr int64_t kMinChunk = int64_t(1) << 18;
  const int64_t chunks =
      std::clamp<int64_t>(std::min<int64_t>(threads, elements / kMinChunk), 1, 64);
  const int64_t per = (elements + chunks - 1) / chunks;
  std::vector<CompareResult> parts(static_cast<size_t>(chunks));
  auto part = [&](int64_t c) {
    const int64_t begin = std::min(elements, c * per);
    const int64_t count = std::min(elements, begin + per) - begin;
    if (count <= 0) return;
    const std::vector<float> actual = decode_values(actual_bytes + begin * width, count, dtype);
    parts[size_t(c)] = compare_outputs(actual.data(), expected + begin, count, scale, begin);
  };
  if (chunks == 1) {
    part(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(size_t(chunks - 1));
    for (int64_t c = 1; c < chunks; ++c) pool.emplace_back(part, c);
    part(0);
    for (std::thread& t : pool) t.join();
  }
  // The serial loop's answer: the first non-finite element if there is one, else the first
  // element of the largest error (chunks are in index order, so a later chunk wins only when
  // strictly larger).
  CompareResult r;
  for (const CompareResult& p : parts) {
    if (p.nonfinite > 0) {
      if (r.nonfinite == 0) {
        r.worst_index = p.worst_index;
        r.worst_actual = p.worst_actual;
        r.worst_expected = p.worst_expected;
      }
      r.nonfinite += p.nonfinite;
      r.max_rel_error = std::numeric_limits<double>::infinity();
    } else if (r.nonfinite == 0 && p.max_rel_error > r.max_rel_error) {
      r.max_rel_error = p.max_rel_error;
      r.worst_index = p.worst_index;
      r.worst_actual = p.worst_actual;
      r.worst_expected = p.worst_expected;
    }
  }
  return r;
}

}  // namespace cutune
