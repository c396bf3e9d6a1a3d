#pragma once
// TMA tensor maps on the GPU: a description (src/ir/tensor_map.h) over a device buffer,
// encoded by the driver's cuTensorMapEncodeTiled into the 128-byte CUtensorMap that a kernel
// takes as a `const __grid_constant__` parameter.

#include <cuda.h>

#include "src/ir/tensor_map.h"
#include "src/runtime/driver_api.h"

namespace cutune {

// The arguments of cuTensorMapEncodeTiled for `desc` (rank 2, no interleave, out-of-bounds
// elements filled with zeros), apart from the map and the address.
struct TiledEncodeArgs {
  CUtensorMapDataType dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  cuuint32_t rank = 2;
  cuuint64_t dims[2] = {1, 1};
  cuuint64_t strides[1] = {16};  // bytes, of dimension 1
  cuuint32_t box[2] = {1, 1};
  cuuint32_t element_strides[2] = {1, 1};
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  CUtensorMapFloatOOBfill oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;  // zeros
};

// Throws std::invalid_argument (one line) for a description that tensor_map_error refuses
// for `buffer_elements`.
TiledEncodeArgs tiled_encode_args(const ir::TensorMapDesc& desc, int64_t buffer_elements);

// Encodes the map over the buffer at `base` (16-byte aligned, as cudaMalloc's are); a driver
// failure throws CudaError.
CUtensorMap encode_tensor_map(const DriverApi& api, const ir::TensorMapDesc& desc,
                              int64_t buffer_elements, CUdeviceptr base);

}  // namespace cutune
