// Tensor-core convolution configurations run in the CPU emulator and match the CPU reference
// on small odd shapes. Inputs are rounded to fp16/bf16 before the reference computes in
// double; the tolerance is the correctness rule's (src/measure/correctness.h: fp32 accumulation,
// plus the output's own rounding for 16-bit outputs).

#include <catch2/catch.hpp>

#include "src/measure/emulated_check.h"
#include "tests/tensor_core/conv_samples.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

emu::Emulator& emulator() {
  static emu::Emulator e;
  return e;
}

void check(const Template& tmpl, const Config& c) {
  EmulatedCheck r = check_in_emulator(tmpl, c, ir::TargetLimits{}, emulator());
  INFO(test::describe(tmpl, c) << "\nstatus " << r.status << ": " << r.message << "\nmax rel error "
                               << r.max_rel_error);
  CHECK(r.passed);
}

// `count` sampled configurations that the verifier accepts must match.
void emulate_sample(const std::string& op, const std::string& name,
                    const std::vector<int64_t>& shape, int count, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  std::mt19937_64 rng(seed);
  int ran = 0;
  for (int draws = 0; ran < count && draws < count * 4; ++draws) {
    std::optional<Config> c = tmpl->space().sample_valid(rng);
    REQUIRE(c.has_value());
    EmulatedCheck r = check_in_emulator(*tmpl, *c, ir::TargetLimits{}, emulator());
    if (r.status == "rejected") continue;
    ++ran;
    INFO(test::describe(*tmpl, *c)
         << "\nstatus " << r.status << ": " << r.message << "\nmax rel error " << r.max_rel_error);
    CHECK(r.passed);
  }
  CHECK(ran == count);
}

}  // namespace

TEST_CASE("the scalar and the full-featured convolution with and without split-K match",
          "[tensor_core][conv][emulator]") {
  auto tmpl = make_template("conv2d_fp16", test::kConvPadded, "conv2d_fp16_nhwc");
  for (const char* knobs : {test::kConvScalar, test::kConvFull, test::kConvSplitK}) {
    check(*tmpl, test::tc_config(*tmpl, knobs));
  }
}

TEST_CASE("6 conv2d_fp16_nhwc configurations on a 7x7 stride-2 layer with C = 3 match",
          "[tensor_core][conv][emulator]") {
  emulate_sample("conv2d_fp16", "conv2d_fp16_nhwc", test::kConv7x7, 6, 801);
}

TEST_CASE("5 conv2d_bf16_nhwc_out16 configurations on a padded 3x3 layer match",
          "[tensor_core][conv][emulator]") {
  emulate_sample("conv2d_bf16", "conv2d_bf16_nhwc_out16", test::kConv3x3, 5, 802);
}

TEST_CASE("5 conv2d_fp16_nhwc configurations on a 1x1 stride-2 layer match",
          "[tensor_core][conv][emulator]") {
  emulate_sample("conv2d_fp16", "conv2d_fp16_nhwc", test::kConv1x1, 5, 803);
}

TEST_CASE("5 conv2d_bf16_nhwc configurations on a dilated strided 3x3 layer match",
          "[tensor_core][conv][emulator]") {
  emulate_sample("conv2d_bf16", "conv2d_bf16_nhwc", test::kConvDilated, 5, 804);
}

TEST_CASE("4 conv2d_fp16_nhwc_out16 configurations with an odd K match",
          "[tensor_core][conv][emulator]") {
  emulate_sample("conv2d_fp16", "conv2d_fp16_nhwc_out16", test::kConvOddK, 4, 805);
}

namespace {

// The full-featured configuration's source with `from` replaced by `to` everywhere.
EmulatedCheck run_planted(const std::string& from, const std::string& to) {
  auto tmpl = make_template("conv2d_fp16", test::kConvPadded, "conv2d_fp16_nhwc");
  CudaSource src = test::tc_source(*tmpl, test::tc_config(*tmpl, test::kConvFull));
  size_t body = src.code.find("extern \"C\"");
  int replaced = 0;
  for (size_t at = src.code.find(from, body); at != std::string::npos;
       at = src.code.find(from, at + to.size())) {
    src.code.replace(at, from.size(), to);
    ++replaced;
  }
  REQUIRE(replaced > 0);
  return check_source_in_emulator(*tmpl, src, emulator(), 2e-5);
}

}  // namespace

TEST_CASE("a planted copy that ignores the padding is a wrong answer",
          "[tensor_core][conv][emulator][planted]") {
  EmulatedCheck r = run_planted("? 16 : 0)", "? 16 : 16)");
  INFO("status " << r.status << ": " << r.message);
  CHECK_FALSE(r.passed);
}
