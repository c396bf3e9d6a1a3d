// The tensor-core GEMM's registry entries, task checks and configuration space.

#include <catch2/catch.hpp>

#include "kernels/gemm_tc.h"
#include "kernels/gemm_wgmma.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

TEST_CASE("gemm/mma and gemm/wgmma take fp16 and bf16 with four templates each",
          "[tensor_core][task]") {
  for (const char* dtype : {"fp16", "bf16"}) {
    const std::string op = std::string("gemm_") + dtype;
    const std::vector<std::string> mma = template_names("gemm", "mma", dtype);
    CHECK(mma ==
          std::vector<std::string>{op + "_nn", op + "_nt", op + "_nn_out16", op + "_nt_out16"});
    CHECK(template_names("gemm", "wgmma", dtype) ==
          std::vector<std::string>{op + "_wgmma_nn", op + "_wgmma_nt", op + "_wgmma_nn_out16",
                                   op + "_wgmma_nt_out16"});
    for (const std::string& t : mma) {
      auto tmpl = make_template(op, {67, 45, 33}, t);
      CHECK(tmpl->name() == t);
      CHECK(tmpl->op() == op);
    }
    CHECK(make_template(op, {8, 8, 8})->name() == std::string(op) + "_nn");
  }
  auto out16 = make_template("gemm_bf16", {4, 4, 4}, "gemm_bf16_nt_out16");
  CHECK(out16->tensors()[0].type == ir::Type::bf16());
  CHECK_FALSE(out16->tensors()[0].zero_init);
  auto f32out = make_template("gemm_fp16", {4, 4, 4}, "gemm_fp16_nt");
  CHECK(f32out->tensors()[0].type == ir::Type::f32());
  CHECK(f32out->tensors()[0].zero_init);
  CHECK(f32out->tensors()[1].type == ir::Type::f16());
}

TEST_CASE("bad tensor-core GEMM tasks are TaskErrors", "[tensor_core][task]") {
  CHECK_THROWS_AS(make_template("gemm_fp16", {4, 4}), TaskError);
  CHECK_THROWS_AS(make_template("gemm_fp16", {0, 4, 4}), TaskError);
  CHECK_THROWS_AS(make_template("gemm_fp16", {4, 4, 4}, "gemm_bf16_nn"), TaskError);
  CHECK_THROWS_WITH(make_template("gemm_bf16", {4, 4, 4}, "gemm_bf16_tt"),
                    Catch::Contains("gemm_bf16_nt_out16"));
  CHECK_THROWS_AS(make_template("gemm_fp16", {65536, 65536, 4}), TaskError);
}

TEST_CASE("tensor-core constraints follow the shape", "[tensor_core][space]") {
  // Odd K: rows of A are not 4-byte aligned, so only element copies remain.
  auto odd = make_template("gemm_fp16", {67, 45, 33}, "gemm_fp16_nt");
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50; ++i) {
    std::optional<Config> c = odd->space().sample_valid(rng);
    REQUIRE(c.has_value());
    CHECK(c->get("copy_bytes") == 2);
    CHECK(c->get("epilogue_vec") == 1);  // N = 45 is odd
    CHECK(c->get("split_k") <= (33 + c->get("block_k") - 1) / c->get("block_k"));
  }
  auto aligned = make_template("gemm_fp16", {128, 72, 40}, "gemm_fp16_nn_out16");
  for (int i = 0; i < 50; ++i) {
    std::optional<Config> c = aligned->space().sample_valid(rng);
    REQUIRE(c.has_value());
    CHECK(c->get("split_k") == 1);  // 16-bit C cannot take atomics
    CHECK(72 % (c->get("copy_bytes") / 2) == 0);
  }
}

TEST_CASE("the tensor-core reference configurations lower", "[tensor_core][space]") {
  for (const std::string& t : template_names("gemm", "mma", "fp16")) {
    auto tmpl = make_template("gemm_fp16", {4096, 4096, 4096}, t);
    std::vector<Config> refs = tmpl->reference_configs();
    REQUIRE(refs.size() == 2);
    for (const Config& c : refs) test::tc_source(*tmpl, c);
  }
}
