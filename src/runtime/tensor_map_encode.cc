#include "src/runtime/tensor_map_encode.h"

#include <stdexcept>

#include "src/runtime/cuda_check.h"

namespace cutune {

namespace {

CUtensorMapDataType data_type(ir::DType d) {
  switch (d) {
    case ir::DType::Float16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case ir::DType::BFloat16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case ir::DType::Float32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case ir::DType::Int32:
      return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case ir::DType::UInt32:
      return CU_TENSOR_MAP_DATA_TYPE_UINT32;
    default:
      throw std::invalid_argument("tensor map: no TMA data type for " + ir::dtype_name(d));
  }
}

CUtensorMapSwizzle swizzle(ir::TmaSwizzle s) {
  switch (s) {
    case ir::TmaSwizzle::none:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
    case ir::TmaSwizzle::b32:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case ir::TmaSwizzle::b64:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case ir::TmaSwizzle::b128:
      return CU_TENSOR_MAP_SWIZZLE_128B;
  }
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

CUtensorMapL2promotion l2(ir::TmaL2Promotion p) {
  switch (p) {
    case ir::TmaL2Promotion::none:
      return CU_TENSOR_MAP_L2_PROMOTION_NONE;
    case ir::TmaL2Promotion::b64:
      return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    case ir::TmaL2Promotion::b128:
      return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    case ir::TmaL2Promotion::b256:
      return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  }
  return CU_TENSOR_MAP_L2_PROMOTION_NONE;
}

}  // namespace

TiledEncodeArgs tiled_encode_args(const ir::TensorMapDesc& desc, int64_t buffer_elements) {
  if (std::string error = ir::tensor_map_error(desc, buffer_elements); !error.empty()) {
    throw std::invalid_argument(error);
  }
  TiledEncodeArgs a;
  a.dtype = data_type(desc.dtype);
  for (int i = 0; i < 2; ++i) {
    a.dims[i] = static_cast<cuuint64_t>(desc.dims[i]);
    a.box[i] = static_cast<cuuint32_t>(desc.box[i]);
    a.element_strides[i] = static_cast<cuuint32_t>(desc.element_strides[i]);
  }
  a.strides[0] = static_cast<cuuint64_t>(desc.row_stride_bytes);
  a.swizzle = swizzle(desc.swizzle);
  a.l2_promotion = l2(desc.l2_promotion);
  return a;
}

CUtensorMap encode_tensor_map(const DriverApi& api, const ir::TensorMapDesc& desc,
                              int64_t buffer_elements, CUdeviceptr base) {
  TiledEncodeArgs a = tiled_encode_args(desc, buffer_elements);
  CUtensorMap map{};
  // The driver takes the address as a plain pointer: device addresses share the host's
  // virtual address space (unified addressing), so the value converts as it is.
  CUTUNE_CU_CHECK(api.cuTensorMapEncodeTiled(&map, a.dtype, a.rank, reinterpret_cast<void*>(base),
                                             a.dims, a.strides, a.box, a.element_strides,
                                             a.interleave, a.swizzle, a.l2_promotion, a.oob_fill));
  return map;
}

}  // namespace cutune
