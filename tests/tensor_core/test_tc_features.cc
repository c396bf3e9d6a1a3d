// The IR features count tensor-core work as such: mma instructions (and their flops), the
// cp.async pipeline's depth and the bytes it keeps in flight.

#include <catch2/catch.hpp>

#include <cmath>

#include "cost_model/features.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

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

}  // namespace

TEST_CASE("tensor-core features count mma instructions and the cp.async ring",
          "[tensor_core][features]") {
  // 128x128x64 with 64x64x32 blocks: 4 blocks of 4 warps, each warp 2x4 m16n8 tiles per k16
  // step, 4 k16 steps: 4 · 4 · 8 · 4 = 512 mma instructions.
  auto tmpl = make_template("gemm_fp16", {128, 128, 64}, "gemm_fp16_nt");
  auto f = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  Config full = test::tc_config(*tmpl, test::kTcFull);
  CHECK(unscaled(*f, full, "kernel.mma_ops") == Approx(512).epsilon(1e-3));
  CHECK(unscaled(*f, full, "kernel.pipeline_depth") == Approx(3).epsilon(1e-3));
  // Per block and K slice: A 64x32 and B 64x32 fp16 = 8 KiB, two slices in flight; the ring
  // commits 4 groups for 2 slices (the last two are empty), so the average group is 4 KiB.
  CHECK(unscaled(*f, full, "kernel.bytes_in_flight") == Approx(8192).epsilon(1e-3));
  CHECK(unscaled(*f, full, "kernel.async_copy_bytes") == Approx(4 * 2 * 8192).epsilon(1e-3));
  CHECK(unscaled(*f, full, "kernel.float_ops") >= 0.999 * 2.0 * 128 * 128 * 64);

  Config scalar = test::tc_config(*tmpl, test::kTcScalar);
  CHECK(unscaled(*f, scalar, "kernel.mma_ops") == Approx(512).epsilon(1e-3));
  CHECK(unscaled(*f, scalar, "kernel.async_copy_bytes") == 0);
  CHECK(unscaled(*f, scalar, "kernel.pipeline_depth") == Approx(1).epsilon(1e-3));
}
