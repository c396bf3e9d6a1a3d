// A TMA configuration of a wgmma GEMM template on its way to the GPU worker: the measure
// request the GPU measurer builds from its generated source names the template's tensors, and
// carries each tensor map's description in the map parameter's place, which the worker encodes
// (cuTensorMapEncodeTiled) over that tensor; here everything up to the driver call is checked.
#include <catch2/catch.hpp>

#include "src/measure/gpu_measurer.h"
#include "src/runtime/tensor_map_encode.h"
#include "tests/tensor_core/wgmma_tma_samples.h"

using namespace cutune;

TEST_CASE("a TMA template kernel's tensor maps reach the worker's request",
          "[wgmma][tma][measure]") {
  auto tmpl = make_template("gemm_fp16", {300, 256, 136}, "gemm_fp16_wgmma_nt");
  std::vector<Config> refs = tmpl->reference_configs();
  REQUIRE(refs.size() >= 2);
  const Config& c = refs[1];  // 128x128x64, TMA, producer
  REQUIRE(c.get("loads") == 1);
  Lowered l = lower(*tmpl, c, ir::TargetLimits{});
  REQUIRE(l.ok());
  const std::vector<TensorSpec> tensors = tmpl->tensors();  // C, A, B

  KernelInstance bound;
  REQUIRE(bind_kernel_arguments(*l.source, tensors, bound).empty());
  MeasureRequest request;  // compiled_candidate copies the binding into the request
  request.args = bound.args;
  request.maps = bound.maps;
  // Parameters: C, A, B, then A's and B's maps, each in its tensor's place.
  REQUIRE(request.args == std::vector<int>{0, 1, 2, 1, 2});
  REQUIRE(request.maps.size() == 5);
  for (int i : {0, 1, 2}) CHECK_FALSE(request.maps[i].has_value());
  REQUIRE(request.maps[3].has_value());
  REQUIRE(request.maps[4].has_value());
  CHECK(*request.maps[3] == l.kernel.tensor_maps[0].desc);
  CHECK(*request.maps[4] == l.kernel.tensor_maps[1].desc);

  // What the worker hands the driver for each: the tensor's extent, 16-byte row strides, the
  // box of one 128-byte-swizzled layout column.
  for (int i : {3, 4}) {
    const TensorSpec& t = tensors[size_t(request.args[i])];
    TiledEncodeArgs e = tiled_encode_args(*request.maps[i], t.elements);
    INFO(t.name);
    CHECK(e.dims[0] == 136);
    CHECK(e.dims[1] == (t.name == "A" ? 300u : 256u));
    CHECK(e.strides[0] == 272);
    CHECK(e.box[0] == 64);
    CHECK(e.box[1] == 128);
    CHECK(e.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
    // A and B are read by many blocks: 256-byte L2 promotion (a hint the emulator ignores).
    CHECK(request.maps[i]->l2_promotion == ir::TmaL2Promotion::b256);
    CHECK(e.l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  }
  // They survive the worker protocol.
  request.kernel_name = l.source->kernel_name;
  MeasureRequest back = measure_request_from_frame(measure_frame(request));
  CHECK(back.args == request.args);
  CHECK(back.maps == request.maps);

  // A cp.async configuration's request has no maps; a parameter that is no tensor is refused.
  KernelInstance plain;
  Lowered cp = lower(*tmpl, refs[0], ir::TargetLimits{});
  REQUIRE(cp.ok());
  REQUIRE(bind_kernel_arguments(*cp.source, tensors, plain).empty());
  CHECK(plain.args == std::vector<int>{0, 1, 2});
  CHECK(plain.maps.empty());
  std::vector<TensorSpec> without_b(tensors.begin(), tensors.begin() + 2);
  CHECK(bind_kernel_arguments(*l.source, without_b, plain) ==
        "kernel parameter 'B' is not one of the template's tensors");
}
