// The tensor-core convolution's registry entries, task checks, configuration space and the
// code it generates for the cases that matter (gathered zero-fill copies, mixed copy widths).

#include <catch2/catch.hpp>

#include <cmath>

#include "cost_model/features.h"

#include "kernels/conv2d_tc.h"
#include "kernels/conv2d_wgmma.h"
#include "kernels/gemm_tc.h"
#include "kernels/layer_suites.h"
#include "src/lower/lower.h"
#include "tests/tensor_core/conv_samples.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

bool has(const std::string& code, const std::string& what) {
  return code.find(what) != std::string::npos;
}

// Undoes the log2(1 + x) scaling of a count feature.
double unscaled(const cost_model::FeatureExtractor& f, const Config& c, const std::string& name) {
  std::vector<float> v(size_t(f.size()));
  f.extract(c, v);
  std::vector<std::string> names = f.names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return std::exp2(double(v[i])) - 1;
  }
  FAIL("no feature " << name);
  return 0;
}

std::string kernel_body(const CudaSource& src) {
  return src.code.substr(src.code.find("extern \"C\""));
}

}  // namespace

TEST_CASE("conv2d/mma and conv2d/wgmma take fp16 and bf16 with two templates each",
          "[tensor_core][conv][task]") {
  for (const char* dtype : {"fp16", "bf16"}) {
    const std::string op = std::string("conv2d_") + dtype;
    const std::vector<std::string> mma = template_names("conv2d", "mma", dtype);
    CHECK(mma == std::vector<std::string>{op + "_nhwc", op + "_nhwc_out16"});
    CHECK(template_names("conv2d", "wgmma", dtype) ==
          std::vector<std::string>{op + "_wgmma_nhwc", op + "_wgmma_nhwc_out16"});
    for (const std::string& t : mma) {
      auto tmpl = make_template(op, test::kConv3x3, t);
      CHECK(tmpl->name() == t);
      CHECK(tmpl->op() == op);
      CHECK(tmpl->shape() == std::vector<int64_t>{2, 12, 9, 7, 20, 3, 3, 1, 1, 1});
      CHECK(tmpl->reduction_length() == 3 * 3 * 12);
      CHECK(tmpl->flops() == 2.0 * (2 * 9 * 7 * 20) * (3 * 3 * 12));
    }
    CHECK(make_template(op, test::kConv3x3)->name() == std::string(op) + "_nhwc");
  }
  auto out16 = make_template("conv2d_bf16", test::kConv3x3, "conv2d_bf16_nhwc_out16");
  std::vector<TensorSpec> t = out16->tensors();
  REQUIRE(t.size() == 3);
  CHECK(t[0].name == "Output");
  CHECK(t[0].type == ir::Type::bf16());
  CHECK(t[0].elements == 2 * 9 * 7 * 20);
  CHECK_FALSE(t[0].zero_init);
  CHECK(t[1].name == "Input");
  CHECK(t[1].elements == 2 * 12 * 9 * 7);
  CHECK(t[2].name == "Filter");
  CHECK(t[2].elements == 3 * 3 * 12 * 20);
  auto f32out = make_template("conv2d_fp16", test::kConv3x3, "conv2d_fp16_nhwc");
  CHECK(f32out->tensors()[0].type == ir::Type::f32());
  CHECK(f32out->tensors()[0].zero_init);
  CHECK(f32out->tensors()[1].type == ir::Type::f16());
  CHECK(f32out->tensors()[2].type == ir::Type::f16());
}

TEST_CASE("bad tensor-core convolution tasks are TaskErrors", "[tensor_core][conv][task]") {
  CHECK_THROWS_WITH(make_template("conv2d_fp16", {1, 2, 3}),
                    Catch::Contains("conv2d_fp16 takes a shape N,C,H,W,K,R,S"));
  CHECK_THROWS_AS(make_template("conv2d_fp16", {1, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1}), TaskError);
  CHECK_THROWS_AS(make_template("conv2d_bf16", {1, 0, 8, 8, 8, 3, 3}), TaskError);
  CHECK_THROWS_WITH(make_template("conv2d_fp16", {1, 8, 4, 4, 8, 7, 7}),
                    Catch::Contains("output is empty"));
  CHECK_THROWS_AS(make_template("conv2d_fp16", {1, 8, 8, 8, 8, 3, 3, 0}), TaskError);
  CHECK_THROWS_AS(make_template("conv2d_fp16", {1024, 1024, 1024, 1024, 8, 1, 1}), TaskError);
  CHECK_THROWS_AS(make_template("conv2d_fp16", test::kConv3x3, "conv2d_bf16_nhwc"), TaskError);
  CHECK_THROWS_WITH(make_template("conv2d_bf16", test::kConv3x3, "conv2d_bf16_nchw"),
                    Catch::Contains("conv2d_bf16_nhwc_out16"));
  CHECK_THROWS_AS(make_template("conv2d_fp16", test::kConv3x3, "conv2d_nhwc"), TaskError);
  CHECK_THROWS_AS(Conv2dTcTemplate(depthwise_shape({1, 8, 8, 8, 3, 3}), ir::DType::Float16, false),
                  TaskError);
  CHECK_THROWS_AS(Conv2dTcTemplate(conv2d_shape(test::kConv3x3), ir::DType::Float32, false),
                  TaskError);
}

TEST_CASE("tensor-core convolution constraints follow the shape", "[tensor_core][conv][space]") {
  std::mt19937_64 rng(17);
  // C = 3 and K = 10: the widest copy any operand can use is 4 bytes (the filter's K).
  auto c1 = make_template("conv2d_fp16", test::kConv7x7, "conv2d_fp16_nhwc");
  for (int i = 0; i < 50; ++i) {
    std::optional<Config> c = c1->space().sample_valid(rng);
    REQUIRE(c.has_value());
    CHECK(c->get("copy_bytes") <= 4);
    CHECK(c->get("block_m") < 2 * 60);  // M = 2·6·5
    CHECK(c->get("block_n") == 32);     // K = 10
  }
  // K = 33 is odd: element copies of the filter, single stores; fp16 output: no split-K.
  auto odd = make_template("conv2d_bf16", test::kConvOddK, "conv2d_bf16_nhwc_out16");
  for (int i = 0; i < 50; ++i) {
    std::optional<Config> c = odd->space().sample_valid(rng);
    REQUIRE(c.has_value());
    CHECK(c->get("epilogue_vec") == 1);
    CHECK(c->get("split_k") == 1);
    CHECK(c->get("copy_bytes") <= 16);  // C = 8: the input still takes 16-byte copies
  }
  Config odd_full = test::tc_config(*odd, test::kConvFull);
  CHECK(odd->space().violation(odd_full).value_or("") == "paired epilogue stores need an even N");
}

TEST_CASE("a configuration outside the constraints is refused by lowering, not a crash",
          "[tensor_core][conv][space]") {
  // A warp tile taller than the block leaves the block no warps, so no thread to copy with.
  auto tmpl = make_template("conv2d_fp16", {1, 64, 56, 56, 64, 3, 3, 1, 1}, "conv2d_fp16_nhwc");
  nlohmann::json j = tmpl->reference_configs().at(0).to_json();
  j["knobs"]["block_m"] = 32;
  j["knobs"]["warp_m"] = 64;
  j.erase("index");  // the knobs name the configuration
  const Config c = tmpl->space().from_json(j);
  REQUIRE(tmpl->space().violation(c).has_value());
  const Lowered l = lower(*tmpl, c, ir::TargetLimits{});
  CHECK_FALSE(l.ok());
  CHECK_THAT(l.build_error, Catch::Contains("tile copy has 0 threads"));
}

TEST_CASE("the tensor-core convolution reference configurations lower on ResNet-18 layers",
          "[tensor_core][conv][space]") {
  for (const SuiteLayer& l : suite_layers("resnet18", 1)) {
    auto tmpl = make_template("conv2d_fp16", l.shape, "conv2d_fp16_nhwc");
    std::vector<Config> refs = tmpl->reference_configs();
    INFO(l.name);
    CHECK(refs.size() >= 2);
    for (const Config& c : refs) test::tc_source(*tmpl, c);
  }
}

TEST_CASE("the tensor-core convolution declares its loops and buffers and counts its mma",
          "[tensor_core][conv][features]") {
  auto conv = make_template("conv2d_fp16", test::kConvPadded, "conv2d_fp16_nhwc");
  auto gemm = make_template("gemm_fp16", {126, 40, 144}, "gemm_fp16_nn");
  CHECK(conv->loop_names() == gemm->loop_names());
  CHECK(conv->buffer_names() == std::vector<std::string>{"Output", "Input", "Filter", "A_shared",
                                                         "B_shared", "C_frag", "A_frag", "B_frag",
                                                         "stage_ring"});
  // M = 126 in 2 tiles of 64, K = 40 in one of 64; 4 warps of 2x4 m16n8 tiles; R·S·C = 144 in
  // 5 slices of 2 k16 steps: 2 · 5 · 2 · 4 · 8 = 640 mma instructions.
  auto f = cost_model::make_ir_features(*conv, ir::TargetLimits{});
  Config full = test::tc_config(*conv, test::kConvFull);
  CHECK(unscaled(*f, full, "kernel.mma_ops") == Approx(640).epsilon(1e-3));
  CHECK(unscaled(*f, full, "kernel.pipeline_depth") == Approx(3).epsilon(1e-3));
}

TEST_CASE("the A loader gathers with zero-fill and copies narrow to what C and K allow",
          "[tensor_core][conv][codegen]") {
  // C = 16 and K = 40: both operands take 16-byte cp.async; padding guards the input copies.
  auto padded = make_template("conv2d_fp16", test::kConvPadded, "conv2d_fp16_nhwc");
  std::string body =
      kernel_body(test::tc_source(*padded, test::tc_config(*padded, test::kConvFull)));
  CHECK(has(body, "cutune_cp_async_16(&A_shared["));
  CHECK(has(body, "cutune_cp_async_16(&B_shared["));
  CHECK(has(body, "? 16 : 0)"));
  CHECK(has(body, "cutune_ldmatrix_x4_trans("));
  CHECK_FALSE(has(body, "atomicAdd"));

  // C = 3: the input is copied element by element (zero stored in the padding) while the
  // filter (K = 10) still takes 4-byte cp.async.
  auto c1 = make_template("conv2d_bf16", test::kConv7x7, "conv2d_bf16_nhwc_out16");
  nlohmann::json knobs = nlohmann::json::parse(test::kConvFull);
  knobs["knobs"]["block_n"] = 32;
  knobs["knobs"]["warp_n"] = 16;
  knobs["knobs"]["copy_bytes"] = 4;
  knobs["knobs"]["epilogue_vec"] = 2;
  Config mixed = c1->space().from_json(knobs);
  REQUIRE(c1->space().is_valid(mixed));
  body = kernel_body(test::tc_source(*c1, mixed));
  CHECK_FALSE(has(body, "(&A_shared["));
  CHECK(has(body, "A_shared["));
  CHECK(has(body, "cutune_f32_to_bf16(0.0f)"));
  CHECK(has(body, "cutune_cp_async_4(&B_shared["));
  CHECK(has(body, "cutune_cp_async_wait_1();"));
  CHECK(has(body, "cutune_pack_bf16x2("));

  // Without padding and tails the gather needs no guard at all.
  auto exact = make_template("conv2d_fp16", {2, 16, 8, 8, 64, 1, 1}, "conv2d_fp16_nhwc");
  knobs = nlohmann::json::parse(test::kConvFull);
  knobs["knobs"]["block_k"] = 16;
  body = kernel_body(test::tc_source(*exact, exact->space().from_json(knobs)));
  CHECK(has(body, "cutune_cp_async_16(&A_shared["));
  CHECK_FALSE(has(body, "? 16 : 0"));
}
