// The arguments cutune gives cuTensorMapEncodeTiled for a tensor-map description
// (src/runtime/tensor_map_encode.h), checked against the driver's enumerations; the encode
// itself needs a GPU (tests/runtime/test_tma_gpu.cc).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "src/runtime/tensor_map_encode.h"

using namespace cutune;

namespace {

ir::TensorMapDesc desc() {
  ir::TensorMapDesc d{std::string("A")};
  d.dtype = ir::DType::BFloat16;
  d.dims[0] = 1000;
  d.dims[1] = 77;
  d.row_stride_bytes = 2016;  // 1008 elements: a padded pitch
  d.box[0] = 64;
  d.box[1] = 32;
  d.element_strides[1] = 2;
  d.swizzle = ir::TmaSwizzle::b128;
  d.l2_promotion = ir::TmaL2Promotion::b256;
  return d;
}

}  // namespace

TEST_CASE("a tensor-map description becomes cuTensorMapEncodeTiled's arguments", "[tma]") {
  TiledEncodeArgs a = tiled_encode_args(desc(), 1008 * 77);
  CHECK(a.dtype == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  CHECK(a.rank == 2);
  CHECK(a.dims[0] == 1000);
  CHECK(a.dims[1] == 77);
  CHECK(a.strides[0] == 2016);
  CHECK(a.box[0] == 64);
  CHECK(a.box[1] == 32);
  CHECK(a.element_strides[0] == 1);
  CHECK(a.element_strides[1] == 2);
  CHECK(a.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE);
  CHECK(a.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  CHECK(a.l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  CHECK(a.oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);  // out-of-bounds elements are zero

  ir::TensorMapDesc f = desc();
  f.dtype = ir::DType::Float16;
  f.swizzle = ir::TmaSwizzle::b64;
  f.box[0] = 32;
  CHECK(tiled_encode_args(f, 1008 * 77).dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  CHECK(tiled_encode_args(f, 1008 * 77).swizzle == CU_TENSOR_MAP_SWIZZLE_64B);
  f.dtype = ir::DType::Float32;
  f.row_stride_bytes = 4032;
  f.box[0] = 8;
  f.swizzle = ir::TmaSwizzle::b32;
  CHECK(tiled_encode_args(f, 1008 * 77).dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  CHECK(tiled_encode_args(f, 1008 * 77).swizzle == CU_TENSOR_MAP_SWIZZLE_32B);
}

TEST_CASE("descriptions the driver or cutune refuse are refused before the driver", "[tma]") {
  auto refuse = [](ir::TensorMapDesc d, int64_t elements, const char* why) {
    INFO(why);
    CHECK_THROWS_WITH(tiled_encode_args(d, elements), Catch::Contains(why));
  };
  ir::TensorMapDesc d = desc();
  refuse(d, 1008 * 76, "reaches byte");  // the buffer is a row short
  d = desc();
  d.row_stride_bytes = 2008;
  refuse(d, 1008 * 77, "multiple of 16");
  d = desc();
  d.box[0] = 32;  // 64-byte rows with the 128B swizzle
  refuse(d, 1008 * 77, "exactly the swizzle span");
  d = desc();
  d.box[1] = 257;
  refuse(d, 1008 * 77, "not in 1..256");
  d = desc();
  d.element_strides[0] = 2;
  refuse(d, 1008 * 77, "element stride 0");
  d = desc();
  d.swizzle = ir::TmaSwizzle::none;
  d.box[0] = 4;  // 8-byte box rows
  refuse(d, 1008 * 77, "box row of 8 bytes");
}
