#include "kernels/conv_shape.h"

#include <fmt/format.h>

#include "kernels/template.h"

namespace cutune {

namespace {

constexpr int64_t kMaxSize = int64_t{1} << 20;

void fill_optional(ConvShape& s, const std::vector<int64_t>& sizes, size_t first) {
  if (sizes.size() > first) s.stride = sizes[first];
  if (sizes.size() > first + 1) s.pad = sizes[first + 1];
  if (sizes.size() > first + 2) s.dilation = sizes[first + 2];
}

void validate(ConvShape& s, const char* op, const char* help) {
  for (int64_t v : {s.n, s.c, s.h, s.w, s.k, s.r, s.s, s.stride, s.dilation}) {
    if (v < 1) throw TaskError(fmt::format("{} sizes must be >= 1 ({})", op, help));
    if (v > kMaxSize) throw TaskError(fmt::format("{} size {} is too large (at most 2^20)", op, v));
  }
  if (s.pad < 0 || s.pad > kMaxSize) {
    throw TaskError(fmt::format("{} padding must be in [0, 2^20], got {}", op, s.pad));
  }
  s.p = conv_output_extent(s.h, s.r, s.stride, s.pad, s.dilation);
  s.q = conv_output_extent(s.w, s.s, s.stride, s.pad, s.dilation);
  if (s.p < 1 || s.q < 1) {
    throw TaskError(fmt::format(
        "{}: the {}x{} filter (dilation {}) is larger than the {}x{} input padded by {}, so the "
        "output is empty",
        op, s.r, s.s, s.dilation, s.h, s.w, s.pad));
  }
  auto fits = [](int64_t a, int64_t b, int64_t c, int64_t d) {
    // Each factor is at most 2^20 (P, Q at most H + 2·pad); multiply with overflow checks.
    __int128 x = __int128(a) * b * c * d;
    return x < INT32_MAX;
  };
  if (!fits(s.n, s.c, s.h + 2 * s.pad, s.w + 2 * s.pad) || !fits(s.n, s.k, s.p, s.q) ||
      !fits(s.depthwise ? 1 : s.k, s.c, s.r, s.s)) {
    throw TaskError(
        fmt::format("{} shape {} is too large: every tensor (input with padding, "
                    "filter, output) must have fewer than 2^31 elements",
                    op, s.to_string()));
  }
}

}  // namespace

int64_t conv_output_extent(int64_t in, int64_t filter, int64_t stride, int64_t pad,
                           int64_t dilation) {
  int64_t span = in + 2 * pad - dilation * (filter - 1) - 1;
  if (span < 0) return 0;
  return span / stride + 1;
}

std::vector<int64_t> ConvShape::to_vector() const {
  if (depthwise) return {n, c, h, w, r, s, stride, pad, dilation};
  return {n, c, h, w, k, r, s, stride, pad, dilation};
}

std::string ConvShape::to_string() const {
  return fmt::format("N={} C={} H={} W={} K={} R={} S={} stride={} pad={} dilation={} -> P={} Q={}",
                     n, c, h, w, k, r, s, stride, pad, dilation, p, q);
}

ConvShape conv2d_shape(const std::vector<int64_t>& sizes, const std::string& op) {
  if (sizes.size() < 7 || sizes.size() > 10) {
    throw TaskError(
        fmt::format("{} takes a shape {} (7 to 10 sizes), got {} sizes", op, kConv2dShapeHelp, sizes.size()));
  }
  ConvShape s;
  s.n = sizes[0], s.c = sizes[1], s.h = sizes[2], s.w = sizes[3];
  s.k = sizes[4], s.r = sizes[5], s.s = sizes[6];
  fill_optional(s, sizes, 7);
  validate(s, "conv2d", kConv2dShapeHelp);
  return s;
}

ConvShape depthwise_shape(const std::vector<int64_t>& sizes) {
  if (sizes.size() < 6 || sizes.size() > 9) {
    throw TaskError(fmt::format("depthwise_conv2d takes a shape {} (6 to 9 sizes), got {} sizes",
                                kDepthwiseShapeHelp, sizes.size()));
  }
  ConvShape s;
  s.depthwise = true;
  s.n = sizes[0], s.c = sizes[1], s.h = sizes[2], s.w = sizes[3];
  s.k = s.c;
  s.r = sizes[4], s.s = sizes[5];
  fill_optional(s, sizes, 6);
  validate(s, "depthwise_conv2d", kDepthwiseShapeHelp);
  return s;
}

void conv_reference(const ConvShape& sh, ConvLayout layout, const std::vector<float>& input,
                    const std::vector<float>& filter, std::vector<float>& output) {
  const bool nchw = layout == ConvLayout::nchw;
  auto in_at = [&](int64_t n, int64_t c, int64_t y, int64_t x) -> double {
    return nchw ? input[((n * sh.c + c) * sh.h + y) * sh.w + x]
                : input[((n * sh.h + y) * sh.w + x) * sh.c + c];
  };
  auto filter_at = [&](int64_t k, int64_t c, int64_t ry, int64_t rx) -> double {
    if (sh.depthwise) return filter[(k * sh.r + ry) * sh.s + rx];
    return nchw ? filter[((k * sh.c + c) * sh.r + ry) * sh.s + rx]
                : filter[((ry * sh.s + rx) * sh.c + c) * sh.k + k];
  };
  for (int64_t n = 0; n < sh.n; ++n) {
    for (int64_t k = 0; k < sh.k; ++k) {
      const int64_t c_begin = sh.depthwise ? k : 0;
      const int64_t c_end = sh.depthwise ? k + 1 : sh.c;
      for (int64_t p = 0; p < sh.p; ++p) {
        for (int64_t q = 0; q < sh.q; ++q) {
          double acc = 0;
          for (int64_t c = c_begin; c < c_end; ++c) {
            for (int64_t ry = 0; ry < sh.r; ++ry) {
              const int64_t y = p * sh.stride - sh.pad + ry * sh.dilation;
              if (y < 0 || y >= sh.h) continue;
              for (int64_t rx = 0; rx < sh.s; ++rx) {
                const int64_t x = q * sh.stride - sh.pad + rx * sh.dilation;
                if (x < 0 || x >= sh.w) continue;
                acc += in_at(n, c, y, x) * filter_at(k, c, ry, rx);
              }
            }
          }
          const int64_t o = nchw ? ((n * sh.k + k) * sh.p + p) * sh.q + q
                                 : ((n * sh.p + p) * sh.q + q) * sh.k + k;
          output[o] = float(acc);
        }
      }
    }
  }
}

}  // namespace cutune
