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

TEST_CASE("cp.async and ldmatrix count the bytes they move, whatever their width",
          "[tensor_core][features]") {
  // 128x128x64 in blocks of 64x64x32: 4 blocks each copy a 64x64 panel of A and of B (8 KiB
  // each), 32 KiB of each matrix in all, into shared memory, whether 16 or 8 bytes a copy.
  auto tmpl = make_template("gemm_fp16", {128, 128, 64}, "gemm_fp16_nt");
  auto f = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  nlohmann::json knobs = nlohmann::json::parse(test::kTcFull);
  const Config wide = tmpl->space().from_json(knobs);
  knobs["knobs"]["copy_bytes"] = 8;
  const Config narrow = tmpl->space().from_json(knobs);
  for (const Config& c : {wide, narrow}) {
    INFO("copy_bytes " << c.get("copy_bytes"));
    CHECK(unscaled(*f, c, "buffer.A.touched_total") == Approx(32768).epsilon(1e-3));
    CHECK(unscaled(*f, c, "buffer.B.touched_total") == Approx(32768).epsilon(1e-3));
    CHECK(unscaled(*f, c, "buffer.A.lanes") == Approx(c.get("copy_bytes") / 2).epsilon(1e-3));
    // The shared tiles are written by the copies and read by ldmatrix.x4 (16 bytes a lane),
    // twice each: A's 64x64 panel by the 2 warps of a block column, B's by those of a row.
    CHECK(unscaled(*f, c, "buffer.A_shared.stores") > 0);
    CHECK(unscaled(*f, c, "buffer.A_shared.touched_total") == Approx(3 * 32768).epsilon(1e-3));
  }
  CHECK(unscaled(*f, wide, "buffer.A.loads") == Approx(unscaled(*f, narrow, "buffer.A.loads") / 2));
}
