#include "src/ir/tensor_map.h"

#include <fmt/format.h>

namespace cutune::ir {

int swizzle_span_bytes(TmaSwizzle s) {
  switch (s) {
    case TmaSwizzle::none:
      return 0;
    case TmaSwizzle::b32:
      return 32;
    case TmaSwizzle::b64:
      return 64;
    case TmaSwizzle::b128:
      return 128;
  }
  return 0;
}

const char* swizzle_name(TmaSwizzle s) {
  switch (s) {
    case TmaSwizzle::none:
      return "none";
    case TmaSwizzle::b32:
      return "32B";
    case TmaSwizzle::b64:
      return "64B";
    case TmaSwizzle::b128:
      return "128B";
  }
  return "?";
}

std::string tensor_map_error(const TensorMapDesc& d, int64_t buffer_elements) {
  const std::string what = fmt::format("tensor map over '{}'", d.buffer);
  if (d.dtype != DType::Float16 && d.dtype != DType::BFloat16 && d.dtype != DType::Float32 &&
      d.dtype != DType::Int32 && d.dtype != DType::UInt32) {
    return fmt::format("{}: element type {} has no TMA data type", what, dtype_name(d.dtype));
  }
  const int eb = d.element_bytes();
  for (int i = 0; i < 2; ++i) {
    if (d.dims[i] < 1 || d.dims[i] > (int64_t{1} << 32)) {
      return fmt::format("{}: dimension {} is {}, not in 1..2^32", what, i, d.dims[i]);
    }
    if (d.box[i] < 1 || d.box[i] > 256) {
      return fmt::format("{}: box dimension {} is {}, not in 1..256", what, i, d.box[i]);
    }
  }
  if (d.element_strides[0] != 1) {
    return fmt::format("{}: element stride 0 must be 1 (TMA has no stride in dimension 0)", what);
  }
  if (d.element_strides[1] < 1 || d.element_strides[1] > 8) {
    return fmt::format("{}: element stride 1 is {}, not in 1..8", what, d.element_strides[1]);
  }
  if (d.row_stride_bytes % 16 != 0 || d.row_stride_bytes < d.dims[0] * eb ||
      d.row_stride_bytes >= (int64_t{1} << 40)) {
    return fmt::format("{}: row stride of {} bytes is not a multiple of 16 at least a row ({})",
                       what, d.row_stride_bytes, d.dims[0] * eb);
  }
  if (d.box_row_bytes() % 16 != 0) {
    return fmt::format("{}: a box row of {} bytes is not a multiple of 16", what,
                       d.box_row_bytes());
  }
  const int span = swizzle_span_bytes(d.swizzle);
  if (span != 0 && d.box_row_bytes() != span) {
    return fmt::format(
        "{}: a box row of {} bytes with the {} swizzle (cutune needs rows of exactly "
        "the swizzle span)",
        what, d.box_row_bytes(), swizzle_name(d.swizzle));
  }
  const int64_t last_byte = (d.dims[1] - 1) * d.row_stride_bytes + d.dims[0] * eb;
  if (last_byte > buffer_elements * eb) {
    return fmt::format("{}: the map reaches byte {} of a buffer of {}", what, last_byte,
                       buffer_elements * eb);
  }
  return "";
}

}  // namespace cutune::ir
