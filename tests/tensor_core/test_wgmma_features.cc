// The IR features count warpgroup MMAs the way they count mma.sync: an m64nNk16 is N/8
// m16n8k16s per warp, with the same flops.

#include <catch2/catch.hpp>

#include <cmath>

#include "cost_model/features.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

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

TEST_CASE("wgmma kernels count their MMAs as mma.sync equivalents", "[wgmma][features]") {
  // 128x128x64 in 64x64x64 blocks of one warpgroup: 4 blocks, 4 k16 steps of one m64n64k16
  // each, which is 8 m16n8k16 per warp: 4 blocks · 4 warps · 4 · 8 = 512, as for mma.sync.
  auto tmpl = make_template("gemm_fp16", {128, 128, 64}, "gemm_fp16_wgmma_nt");
  auto f = cost_model::make_ir_features(*tmpl, ir::TargetLimits{});
  Config c = test::tc_config(
      *tmpl, R"({"knobs":{"block_m":64,"block_n":64,"block_k":64,"stages":3,"warpgroups":1,)"
             R"("swizzle":128,"copy_bytes":16,"raster_group":1,"split_k":1,"epilogue":1}})");
  CHECK(unscaled(*f, c, "kernel.mma_ops") == Approx(512).epsilon(1e-3));
  CHECK(unscaled(*f, c, "kernel.float_ops") >= 0.999 * 2.0 * 128 * 128 * 64);
  CHECK(unscaled(*f, c, "kernel.pipeline_depth") == Approx(3).epsilon(1e-3));
}
