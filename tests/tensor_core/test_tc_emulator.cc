// Tensor-core GEMM configurations run in the CPU emulator (which emulates mma, ldmatrix and
// cp.async per lane, src/emulator) and match the CPU reference on odd shapes. Inputs are
// rounded to fp16/bf16 before the reference computes in double, so with fp32 C only the
// accumulation order differs (relative error ~1e-6 here); a 16-bit C adds its own rounding
// (half an ulp: 2^-11 for fp16, 2^-8 for bf16).

#include <catch2/catch.hpp>

#include "src/measure/emulated_check.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

void emulate_sample(const std::string& op, const std::string& name, std::vector<int64_t> shape,
                    int count, uint64_t seed) {
  auto tmpl = make_template(op, shape, name);
  emu::Emulator emulator;
  std::mt19937_64 rng(seed);
  int ran = 0;
  for (int draws = 0; ran < count && draws < count * 4; ++draws) {
    std::optional<Config> c = tmpl->space().sample_valid(rng);
    REQUIRE(c.has_value());
    EmulatedCheck r = check_in_emulator(*tmpl, *c, ir::TargetLimits{}, emulator);
    if (r.status == "rejected") continue;
    ++ran;
    INFO(test::describe(*tmpl, *c)
         << "\nstatus " << r.status << ": " << r.message << "\nmax rel error " << r.max_rel_error);
    CHECK(r.passed);
  }
  CHECK(ran == count);
}

}  // namespace

TEST_CASE("the scalar and full-featured configurations match the reference",
          "[tensor_core][emulator]") {
  for (const char* name : {"gemm_fp16_nn", "gemm_fp16_nt"}) {
    auto tmpl = make_template("gemm_fp16", {128, 72, 40}, name);
    emu::Emulator emulator;
    for (const char* knobs : {test::kTcScalar, test::kTcFull}) {
      Config c = test::tc_config(*tmpl, knobs);
      EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator, 2e-5);
      INFO(test::describe(*tmpl, c) << "\nstatus " << r.status << ": " << r.message);
      CHECK(r.passed);
    }
  }
}

TEST_CASE("12 gemm_fp16_nn configurations on 128x72x40 match", "[tensor_core][emulator]") {
  emulate_sample("gemm_fp16", "gemm_fp16_nn", {128, 72, 40}, 12, 701);
}

TEST_CASE("10 gemm_bf16_nn_out16 configurations on 67x46x33 match", "[tensor_core][emulator]") {
  emulate_sample("gemm_bf16", "gemm_bf16_nn_out16", {67, 46, 33}, 10, 702);
}

TEST_CASE("12 gemm_fp16_nt configurations on 67x45x33 match", "[tensor_core][emulator]") {
  emulate_sample("gemm_fp16", "gemm_fp16_nt", {67, 45, 33}, 12, 703);
}

TEST_CASE("10 gemm_bf16_nt configurations on 96x40x72 match", "[tensor_core][emulator]") {
  emulate_sample("gemm_bf16", "gemm_bf16_nt", {96, 40, 72}, 10, 704);
}

TEST_CASE("round_to_storage rounds to nearest even", "[tensor_core][check]") {
  using ir::DType;
  CHECK(round_to_storage(1.0f, DType::Float16) == 1.0f);
  CHECK(round_to_storage(1.0f + 0x1p-11f, DType::Float16) == 1.0f);  // tie -> even
  CHECK(round_to_storage(1.0f + 0x1p-11f + 0x1p-20f, DType::Float16) == 1.0f + 0x1p-10f);
  CHECK(round_to_storage(65519.0f, DType::Float16) == 65504.0f);
  CHECK(std::isinf(round_to_storage(65520.0f, DType::Float16)));
  CHECK(round_to_storage(0x1p-24f, DType::Float16) == 0x1p-24f);  // smallest subnormal
  CHECK(round_to_storage(0x1p-26f, DType::Float16) == 0.0f);
  CHECK(round_to_storage(1.0f + 0x1p-8f, DType::BFloat16) == 1.0f);  // tie -> even
  CHECK(round_to_storage(1.0f + 0x1p-8f + 0x1p-16f, DType::BFloat16) == 1.0f + 0x1p-7f);
  CHECK(round_to_storage(-3.0f, DType::BFloat16) == -3.0f);
}

namespace {

// The full-featured configuration's source with `from` replaced by `to` everywhere.
EmulatedCheck run_planted(const std::string& from, const std::string& to) {
  auto tmpl = make_template("gemm_fp16", {128, 72, 40}, "gemm_fp16_nt");
  CudaSource src = test::tc_source(*tmpl, test::tc_config(*tmpl, test::kTcFull));
  size_t body = src.code.find("extern \"C\"");
  int replaced = 0;
  for (size_t at = src.code.find(from, body); at != std::string::npos;
       at = src.code.find(from, at + to.size())) {
    src.code.replace(at, from.size(), to);
    ++replaced;
  }
  REQUIRE(replaced > 0);
  emu::Emulator emulator;
  return check_source_in_emulator(*tmpl, src, emulator, 2e-5);
}

}  // namespace

TEST_CASE("a planted missing cp.async wait reads shared memory too early",
          "[tensor_core][emulator][planted]") {
  EmulatedCheck r = run_planted("cutune_cp_async_wait_1();", "");
  INFO("status " << r.status << ": " << r.message);
  CHECK_FALSE(r.passed);
}

TEST_CASE("a planted wrong ldmatrix row mapping is a wrong answer",
          "[tensor_core][emulator][planted]") {
  EmulatedCheck r = run_planted("lane % 16", "(lane + 1) % 16");
  INFO("status " << r.status << ": " << r.message);
  CHECK_FALSE(r.passed);
}
