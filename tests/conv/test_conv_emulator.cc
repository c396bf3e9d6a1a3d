// Sampled configurations of each convolution template run in the CPU emulator on small odd
// shapes (stride 2, padding, dilation, 1x1 / 3x3 / 7x7 and non-square filters, channel counts
// that no tile divides, batch > 1) and must match the CPU reference.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "src/lower/lower.h"
#include "src/measure/correctness.h"
#include "src/measure/emulated_check.h"
#include "tests/conv/conv_test_util.h"
#include "tests/kernels/stratified_sample.h"

using namespace cutune;

namespace {

emu::Emulator& emulator() {
  static emu::Emulator e;
  return e;
}

void check_sampled(const std::string& op, const std::string& name,
                   const std::vector<int64_t>& shape, int count, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  std::vector<Config> configs = test::sample_configs(*tmpl, count, seed);
  // The reference configurations too, where the shape admits them.
  for (const Config& c : tmpl->reference_configs()) configs.push_back(c);
  for (const Config& c : configs) {
    INFO(tmpl->name() << " config " << c.to_string());
    EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator());
    INFO(r.status << ": " << r.message);
    CHECK(r.passed);
    CHECK(r.max_rel_error < 1e-4);
  }
}

// Every value of every knob (stratified, tests/kernels/stratified_sample.h) on a shape with tails
// in every tiled dimension and room for several blocks each way.
void check_stratified(const std::string& op, const std::string& name,
                      const std::vector<int64_t>& shape, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  std::vector<std::string> missing;
  const auto lowers = [&](const Config& c) { return lower(*tmpl, c, ir::TargetLimits{}).ok(); };
  std::vector<Config> configs = test::stratified_configs(*tmpl, seed, lowers, &missing);
  for (const std::string& m : missing) UNSCOPED_INFO("never emulated: " << m);
  CHECK(missing.empty());
  const double tolerance = error_tolerance("float32", tmpl->reduction_length());
  for (const Config& c : configs) {
    EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator(), tolerance);
    INFO(tmpl->name() << " config " << c.to_string() << "\n" << r.status << ": " << r.message);
    CHECK(r.passed);
  }
}

}  // namespace

TEST_CASE("conv2d_nchw: every knob value, large tiles included", "[conv][emulator]") {
  check_stratified("conv2d", "conv2d_nchw", {1, 40, 30, 34, 36, 3, 3, 1, 1}, 31);
}
TEST_CASE("conv2d_nhwc: every knob value, several block columns", "[conv][emulator]") {
  check_stratified("conv2d", "conv2d_nhwc", {1, 12, 13, 11, 72, 3, 3, 1, 1}, 32);
}
TEST_CASE("depthwise: every knob value, inner_x=4 included", "[conv][emulator]") {
  check_stratified("depthwise_conv2d", "", {1, 5, 19, 37, 3, 3, 1, 1}, 33);
}

TEST_CASE("conv2d_nchw: 3x3, pad 1, batch 2, 3 -> 5 channels", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nchw", {2, 3, 9, 11, 5, 3, 3, 1, 1}, 5, 1);
}
TEST_CASE("conv2d_nchw: 7x7, stride 2, pad 3", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nchw", {1, 5, 13, 10, 7, 7, 7, 2, 3}, 5, 2);
}
TEST_CASE("conv2d_nchw: 1x1, stride 2, batch 2", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nchw", {2, 6, 7, 9, 9, 1, 1, 2, 0}, 5, 3);
}
TEST_CASE("conv2d_nchw: dilated 3x3, stride 2", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nchw", {1, 4, 12, 11, 6, 3, 3, 2, 2, 2}, 5, 4);
}
TEST_CASE("conv2d_nchw: 3x2 filter, no padding, batch 3", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nchw", {3, 7, 6, 5, 3, 3, 2}, 5, 5);
}

TEST_CASE("conv2d_nhwc: 3x3, pad 1, batch 2, 3 -> 5 channels", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nhwc", {2, 3, 9, 11, 5, 3, 3, 1, 1}, 5, 11);
}
TEST_CASE("conv2d_nhwc: 7x7, stride 2, pad 3", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nhwc", {1, 5, 13, 10, 7, 7, 7, 2, 3}, 5, 12);
}
TEST_CASE("conv2d_nhwc: 1x1, stride 2, channels divisible by 4", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nhwc", {2, 8, 7, 9, 12, 1, 1, 2, 0}, 5, 13);
}
TEST_CASE("conv2d_nhwc: dilated 3x3, stride 2, vectorisable channels", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nhwc", {1, 4, 12, 11, 8, 3, 3, 2, 2, 2}, 5, 14);
}
TEST_CASE("conv2d_nhwc: 3x2 filter, no padding, batch 3", "[conv][emulator]") {
  check_sampled("conv2d", "conv2d_nhwc", {3, 7, 6, 5, 3, 3, 2}, 5, 15);
}

TEST_CASE("depthwise: 3x3, pad 1, batch 2, 5 channels", "[conv][emulator]") {
  check_sampled("depthwise_conv2d", "", {2, 5, 9, 11, 3, 3, 1, 1}, 5, 21);
}
TEST_CASE("depthwise: 3x3, stride 2, pad 1", "[conv][emulator]") {
  check_sampled("depthwise_conv2d", "", {1, 3, 15, 14, 3, 3, 2, 1}, 5, 22);
}
TEST_CASE("depthwise: 7x7, stride 2, pad 3", "[conv][emulator]") {
  check_sampled("depthwise_conv2d", "", {1, 6, 13, 10, 7, 7, 2, 3}, 5, 23);
}
TEST_CASE("depthwise: 1x1 and dilated 3x3", "[conv][emulator]") {
  check_sampled("depthwise_conv2d", "", {2, 3, 7, 5, 1, 1, 2}, 3, 24);
  check_sampled("depthwise_conv2d", "", {1, 5, 11, 12, 3, 3, 1, 2, 2}, 3, 25);
}
TEST_CASE("depthwise: 3x2 filter, no padding, batch 3", "[conv][emulator]") {
  check_sampled("depthwise_conv2d", "", {3, 7, 6, 5, 3, 2}, 5, 26);
}

TEST_CASE("conv2d_nhwc: float4 im2col loads, double buffered, with padding", "[conv][emulator]") {
  auto tmpl = make_template("conv2d", {2, 8, 7, 9, 12, 3, 3, 2, 1}, "conv2d_nhwc");
  for (int db : {0, 1}) {
    nlohmann::json j;
    j["knobs"] = {{"block_m", 32}, {"block_n", 16},       {"block_k", 8}, {"thread_m", 4},
                  {"thread_n", 4}, {"frag_m", 4},         {"frag_n", 4},  {"vec_load", 4},
                  {"smem_pad", 4}, {"double_buffer", db}, {"unroll_k", 1}};
    Config c = tmpl->space().from_json(j);
    REQUIRE(tmpl->space().is_valid(c));
    EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator());
    INFO(r.status << ": " << r.message);
    CHECK(r.passed);
  }
}
