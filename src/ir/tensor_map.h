#pragma once
// The description of a TMA tensor map (CUDA's CUtensorMap, built by cuTensorMapEncodeTiled):
// a 2-D tiled view of one global buffer that `cp.async.bulk.tensor.2d` copies boxes of into
// shared memory. A kernel takes each one as a `const __grid_constant__ cutune_tensor_map`
// parameter (128 bytes, 64-byte aligned); the GPU worker encodes it through the driver for the
// buffer's device address, the CPU emulator builds its own record of the same description.
//
// Conventions: dimension 0 is the innermost (contiguous) one. A box is `box[0]` elements of
// dimension 0 by `box[1]` of dimension 1, traversed with `element_strides` (dimension 0's is
// always 1 without interleave); it lands in shared memory densely, row after row, as
// box[0] x ceil(box[1] / element_strides[1]) elements, with the 16-byte chunks of each
// swizzle-span row permuted by the swizzle (src/emulator/smem_swizzle.h). Elements outside
// the global dimensions are filled with zeros; the copy always counts the whole box's bytes.

#include <cstdint>
#include <string>

#include "src/ir/type.h"

namespace cutune::ir {

// Shared-memory swizzle of the copied box: 16-byte chunks permuted within 32-, 64- or 128-byte
// spans (CU_TENSOR_MAP_SWIZZLE_NONE, _32B, _64B, _128B, in that order).
enum class TmaSwizzle : uint8_t { none, b32, b64, b128 };
// L2 sector promotion (CU_TENSOR_MAP_L2_PROMOTION_*): a performance hint only.
enum class TmaL2Promotion : uint8_t { none, b64, b128, b256 };

int swizzle_span_bytes(TmaSwizzle s);    // 0, 32, 64, 128
const char* swizzle_name(TmaSwizzle s);  // "none", "32B", "64B", "128B"

struct TensorMapDesc {
  std::string buffer;  // the global buffer (a kernel parameter) the map addresses
  DType dtype = DType::Float16;
  int64_t dims[2] = {1, 1};         // elements per dimension
  int64_t row_stride_bytes = 16;    // bytes from one dimension-1 index to the next
  int box[2] = {1, 1};              // elements traversed per copy, 1..256 each
  int element_strides[2] = {1, 1};  // traversal steps, 1..8; [0] must be 1
  TmaSwizzle swizzle = TmaSwizzle::none;
  TmaL2Promotion l2_promotion = TmaL2Promotion::none;

  int element_bytes() const { return Type{dtype, 1}.element_bytes(); }
  int box_rows() const { return (box[1] + element_strides[1] - 1) / element_strides[1]; }
  int64_t box_row_bytes() const { return int64_t{box[0]} * element_bytes(); }
  // What one copy writes to shared memory and counts on the mbarrier (complete_tx).
  int64_t box_bytes() const { return box_row_bytes() * box_rows(); }

  friend bool operator==(const TensorMapDesc&, const TensorMapDesc&) = default;
};

// Why `d` is not a tensor map cutune can build and emulate over a buffer of `buffer_elements`
// elements of d.dtype, in one line; "" when it is. The rules are cuTensorMapEncodeTiled's
// (box and strides, 16-byte multiples, inner box bytes at most the swizzle span) plus cutune's
// own: the inner box row must be exactly the swizzle span when swizzling (the layout wgmma's
// canonical swizzled layouts use), and the map must lie inside the buffer.
std::string tensor_map_error(const TensorMapDesc& d, int64_t buffer_elements);

// A kernel parameter of tensor-map kind: `name` is how the kernel body refers to it (a Var of
// that name, see src/ir/tma_intrinsics.h).
struct TensorMapParam {
  std::string name;
  TensorMapDesc desc;
};

}  // namespace cutune::ir
