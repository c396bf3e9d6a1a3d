#include "kernels/conv_shape.h"

#include <catch2/catch.hpp>

#include "kernels/template.h"

using namespace cutune;

TEST_CASE("conv2d shapes default to stride 1, pad 0, dilation 1", "[conv]") {
  ConvShape s = conv2d_shape({2, 3, 10, 12, 8, 3, 5});
  CHECK(s.stride == 1);
  CHECK(s.pad == 0);
  CHECK(s.dilation == 1);
  CHECK(s.p == 8);
  CHECK(s.q == 8);
  CHECK(s.to_vector() == std::vector<int64_t>{2, 3, 10, 12, 8, 3, 5, 1, 0, 1});
  CHECK(s.flops() == 2.0 * 2 * 8 * 8 * 8 * 3 * 3 * 5);
  CHECK(s.reduction_length() == 3 * 3 * 5);
}

TEST_CASE("conv2d output extents follow stride, padding and dilation", "[conv]") {
  CHECK(conv2d_shape({1, 3, 224, 224, 64, 7, 7, 2, 3}).p == 112);
  CHECK(conv2d_shape({1, 64, 56, 56, 128, 1, 1, 2}).q == 28);
  CHECK(conv2d_shape({1, 64, 56, 56, 128, 3, 3, 2, 1}).q == 28);
  ConvShape d = conv2d_shape({1, 4, 12, 12, 6, 3, 3, 1, 2, 2});
  CHECK(d.p == 12);  // a dilated 3x3 spans 5 rows: 12 + 4 - 5 + 1
  CHECK(conv_output_extent(7, 3, 2, 1, 1) == 4);
}

TEST_CASE("depthwise shapes have K = C and no K in the list", "[conv]") {
  ConvShape s = depthwise_shape({1, 32, 112, 112, 3, 3, 2, 1});
  CHECK(s.depthwise);
  CHECK(s.k == 32);
  CHECK(s.p == 56);
  CHECK(s.filter_elements() == 32 * 9);
  CHECK(s.flops() == 2.0 * 32 * 56 * 56 * 9);
  CHECK(s.to_vector() == std::vector<int64_t>{1, 32, 112, 112, 3, 3, 2, 1, 1});
}

TEST_CASE("impossible conv shapes are TaskErrors with one-line messages", "[conv]") {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const TaskError& e) {
      return std::string(e.what());
    }
    return std::string("no TaskError");
  };
  std::string too_big_filter = message([] { conv2d_shape({1, 3, 4, 4, 8, 7, 7}); });
  CHECK(too_big_filter.find("larger than the 4x4 input") != std::string::npos);
  CHECK(too_big_filter.find('\n') == std::string::npos);
  CHECK_THROWS_AS(conv2d_shape({1, 3, 4, 4, 8, 7, 7, 1, 1}), TaskError);
  CHECK_NOTHROW(conv2d_shape({1, 3, 4, 4, 8, 7, 7, 1, 2}));
  CHECK_THROWS_AS(conv2d_shape({1, 3, 9, 9, 8, 3, 3, 1, 0, 5}), TaskError);  // dilated span 11
  CHECK_THROWS_AS(conv2d_shape({1, 3, 4, 4, 8, 3}), TaskError);              // too few sizes
  CHECK_THROWS_AS(conv2d_shape({1, 3, 4, 4, 8, 3, 3, 1, 1, 1, 1}), TaskError);
  CHECK_THROWS_AS(conv2d_shape({0, 3, 4, 4, 8, 3, 3}), TaskError);
  CHECK_THROWS_AS(conv2d_shape({1, 3, 4, 4, 8, 3, 3, 0}), TaskError);  // stride 0
  CHECK_THROWS_AS(conv2d_shape({1, 3, 4, 4, 8, 3, 3, 1, -1}), TaskError);
  CHECK(message([] {
          conv2d_shape({64, 512, 1024, 1024, 8, 3, 3});
        }).find("2^31") != std::string::npos);
  CHECK_THROWS_AS(depthwise_shape({1, 8, 2, 2, 3, 3}), TaskError);
  CHECK_THROWS_AS(depthwise_shape({1, 8, 2, 2, 3}), TaskError);
}

TEST_CASE("the registry makes conv2d and depthwise templates", "[conv]") {
  CHECK(template_names("conv2d", "simt") == std::vector<std::string>{"conv2d_nchw", "conv2d_nhwc"});
  CHECK(template_names("depthwise_conv2d") == std::vector<std::string>{"depthwise_conv2d_nchw"});

  std::vector<int64_t> shape = {1, 3, 9, 9, 4, 3, 3, 2, 1};
  CHECK(make_template("conv2d", shape)->name() == "conv2d_nchw");
  auto nhwc = make_template("conv2d", shape, "conv2d_nhwc");
  CHECK(nhwc->name() == "conv2d_nhwc");
  CHECK(nhwc->op() == "conv2d");
  CHECK(nhwc->shape() == std::vector<int64_t>{1, 3, 9, 9, 4, 3, 3, 2, 1, 1});
  CHECK(nhwc->flops() == 2.0 * 4 * 5 * 5 * 3 * 9);
  auto dw = make_template("depthwise_conv2d", {1, 3, 9, 9, 3, 3});
  CHECK(dw->name() == "depthwise_conv2d_nchw");
  CHECK(dw->reduction_length() == 9);
  CHECK_THROWS_AS(make_template("conv2d", shape, "conv2d_winograd"), TaskError);
  CHECK_THROWS_AS(make_template("conv2d", {1, 3, 9, 9}), TaskError);
  CHECK_THROWS_AS(make_template("depthwise_conv2d", {1, 3, 9, 9, 3, 3}, "conv2d_nchw"), TaskError);
}

TEST_CASE("the CPU reference computes a padded, strided convolution", "[conv]") {
  // One 3x3 channel 1..9, a 2x2 filter of ones, pad 1, stride 2: output 2x2 of window sums.
  ConvShape s = conv2d_shape({1, 1, 3, 3, 1, 2, 2, 2, 1});
  REQUIRE(s.p == 2);
  std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 1, 1, 1}, out(4);
  conv_reference(s, ConvLayout::nchw, in, w, out);
  CHECK(out == std::vector<float>{1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9});
}

TEST_CASE("the NCHW and NHWC references agree on transposed data", "[conv]") {
  ConvShape s = conv2d_shape({2, 3, 5, 4, 2, 3, 2, 2, 1});
  std::vector<float> in_nchw(s.input_elements()), w_kcrs(s.filter_elements());
  for (size_t i = 0; i < in_nchw.size(); ++i) in_nchw[i] = float(int(i * 7 % 11) - 5);
  for (size_t i = 0; i < w_kcrs.size(); ++i) w_kcrs[i] = float(int(i * 5 % 7) - 3);
  std::vector<float> in_nhwc(in_nchw.size()), w_rsck(w_kcrs.size());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t y = 0; y < s.h; ++y)
        for (int64_t x = 0; x < s.w; ++x)
          in_nhwc[((n * s.h + y) * s.w + x) * s.c + c] =
              in_nchw[((n * s.c + c) * s.h + y) * s.w + x];
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t r = 0; r < s.r; ++r)
        for (int64_t q = 0; q < s.s; ++q)
          w_rsck[((r * s.s + q) * s.c + c) * s.k + k] = w_kcrs[((k * s.c + c) * s.r + r) * s.s + q];
  std::vector<float> out_nchw(s.output_elements()), out_nhwc(s.output_elements());
  conv_reference(s, ConvLayout::nchw, in_nchw, w_kcrs, out_nchw);
  conv_reference(s, ConvLayout::nhwc, in_nhwc, w_rsck, out_nhwc);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k)
      for (int64_t p = 0; p < s.p; ++p)
        for (int64_t q = 0; q < s.q; ++q)
          CHECK(out_nchw[((n * s.k + k) * s.p + p) * s.q + q] ==
                out_nhwc[((n * s.p + p) * s.q + q) * s.k + k]);
}
