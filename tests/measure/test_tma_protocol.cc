// Tensor-map parameters in the worker protocol: a measure request carries each map's
// description to the worker, which encodes it over the tensor's device address.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "src/measure/worker_protocol.h"

using namespace cutune;

TEST_CASE("a measure request's tensor maps survive the frame", "[worker][tma]") {
  MeasureRequest r;
  r.id = 7;
  r.kernel_name = "k";
  r.args = {0, 1, 1};
  ir::TensorMapDesc d;
  d.buffer = "B";
  d.dtype = ir::DType::BFloat16;
  d.dims[0] = 4096;
  d.dims[1] = 333;
  d.row_stride_bytes = 8192;
  d.box[0] = 64;
  d.box[1] = 128;
  d.element_strides[1] = 2;
  d.swizzle = ir::TmaSwizzle::b128;
  d.l2_promotion = ir::TmaL2Promotion::b128;
  r.maps = {std::nullopt, std::nullopt, d};
  const MeasureRequest back = measure_request_from_frame(measure_frame(r));
  REQUIRE(back.maps.size() == 3);
  CHECK_FALSE(back.maps[0].has_value());
  CHECK_FALSE(back.maps[1].has_value());
  REQUIRE(back.maps[2].has_value());
  CHECK(*back.maps[2] == d);

  // A request without maps (every existing kind) has none after the round trip.
  r.maps.clear();
  CHECK(measure_request_from_frame(measure_frame(r)).maps.empty());
}

TEST_CASE("a malformed tensor map in a measure request is one line of error", "[worker][tma]") {
  MeasureRequest r;
  r.kernel_name = "k";
  r.args = {0};
  ir::TensorMapDesc d;
  d.buffer = "A";
  r.maps = {d};
  Frame f = measure_frame(r);
  f.header["maps"][0]["swizzle"] = 9;
  CHECK_THROWS_WITH(measure_request_from_frame(f), Catch::Contains("malformed tensor map"));
  f.header["maps"][0].erase("box");
  CHECK_THROWS_AS(measure_request_from_frame(f), std::invalid_argument);
  f.header["maps"][0] = {{"buffer", "A"}};
  CHECK_THROWS_AS(measure_request_from_frame(f), std::invalid_argument);
}
