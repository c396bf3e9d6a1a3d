#include "src/measure/emulated_check.h"
#include "src/lower/lower.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

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

// A buffer of `type` holding `values`, which are rounded to the type in place so that the
// reference sees what the kernel sees.
emu::HostBuffer to_host_buffer(ir::Type type, std::vector<float>& values) {
  if (type.element_bytes() != 2) return emu::HostBuffer::from_floats(values);
  emu::HostBuffer b;
  b.type = type;
  b.bytes.resize(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = type.dtype == ir::DType::Float16 ? to_f16(values[i]) : to_bf16(values[i]);
    values[i] = type.dtype == ir::DType::Float16 ? from_f16(bits) : bits_float(uint32_t(bits) << 16);
    std::memcpy(&b.bytes[i * 2], &bits, 2);
  }
  return b;
}

std::vector<float> from_host_buffer(const emu::HostBuffer& b) {
  if (b.type.element_bytes() != 2) return b.to_floats();
  std::vector<float> out(b.bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, &b.bytes[i * 2], 2);
    out[i] = b.type.dtype == ir::DType::Float16 ? from_f16(bits) : bits_float(uint32_t(bits) << 16);
  }
  return out;
}

}  // namespace

float round_to_storage(float value, ir::DType storage) {
  if (storage == ir::DType::Float16) return from_f16(to_f16(value));
  if (storage == ir::DType::BFloat16) return bits_float(uint32_t(to_bf16(value)) << 16);
  return value;
}

EmulatedCheck check_source_in_emulator(const Template& tmpl, const CudaSource& source,
                                       emu::Emulator& emulator, double tolerance, uint64_t seed) {
  std::vector<TensorSpec> specs = tmpl.tensors();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> host(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    host[i].resize(size_t(specs[i].elements));
    if (specs[i].is_output) {
      float start = specs[i].zero_init ? 0.0f : std::numeric_limits<float>::quiet_NaN();
      std::fill(host[i].begin(), host[i].end(), start);
    } else {
      for (float& v : host[i]) v = dist(rng);
    }
  }
  std::vector<emu::HostBuffer> buffers;
  for (size_t i = 0; i < specs.size(); ++i) buffers.push_back(to_host_buffer(specs[i].type, host[i]));

  EmulatedCheck out;
  emu::EmuResult r = emulator.run(source, buffers);
  out.compile_seconds = r.compile_seconds;
  out.run_seconds = r.run_seconds;
  out.status = emu::to_string(r.status);
  if (r.status != emu::EmuStatus::ok) {
    out.max_rel_error = std::numeric_limits<double>::infinity();
    std::string msg = r.message;
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg = msg.substr(0, nl);
    out.message = msg;
    return out;
  }

  std::vector<std::vector<float>> expected = host;
  tmpl.reference(expected);
  double worst = 0;
  std::string where;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].is_output) continue;
    double sum_sq = 0;
    for (float v : expected[i]) sum_sq += double(v) * v;
    double rms = std::sqrt(sum_sq / double(std::max<size_t>(expected[i].size(), 1)));
    double floor = std::max(rms, 1e-6);
    std::vector<float> got = from_host_buffer(buffers[i]);
    for (size_t e = 0; e < got.size(); ++e) {
      double ref = expected[i][e];
      double err = std::isfinite(got[e])
                       ? std::abs(double(got[e]) - ref) / std::max(std::abs(ref), floor)
                       : std::numeric_limits<double>::infinity();
      if (err > worst) {
        worst = err;
        where = fmt::format("{}[{}] = {} but the reference is {}", specs[i].name, e, got[e], ref);
      }
    }
  }
  out.max_rel_error = worst;
  out.passed = worst < tolerance;
  if (!out.passed) {
    out.status = "wrong_answer";
    out.message = fmt::format("max error {:.3g} at {}", worst, where);
  }
  return out;
}

EmulatedCheck check_in_emulator(const Template& tmpl, const Config& config,
                                const ir::TargetLimits& limits, emu::Emulator& emulator,
                                double tolerance, uint64_t seed) {
  Lowered l = lower(tmpl, config, limits);
  if (!l.ok()) {
    EmulatedCheck out;
    out.status = "rejected";
    out.max_rel_error = std::numeric_limits<double>::infinity();
    out.message = l.verify.errors.empty() ? "rejected" : l.verify.errors.front();
    return out;
  }
  return check_source_in_emulator(tmpl, *l.source, emulator, tolerance, seed);
}

}  // namespace cutune
