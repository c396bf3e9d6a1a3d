#include "src/measure/l2_flush.h"

#include <algorithm>

#include "src/runtime/cuda_check.h"
#include "src/runtime/driver_api.h"

namespace cutune {

size_t l2_flush_bytes(int64_t l2_bytes) {
  const int64_t bytes = std::max<int64_t>(2 * std::max<int64_t>(l2_bytes, 0), 8 << 20);
  return static_cast<size_t>((bytes + 3) / 4 * 4);
}

L2Flusher::L2Flusher(int64_t l2_bytes) : buffer_(l2_flush_bytes(l2_bytes)) {}

void L2Flusher::flush(CUstream stream) {
  ++value_;
  CUTUNE_CU_CHECK(
      require_driver().cuMemsetD32Async(buffer_.get(), value_, buffer_.bytes() / 4, stream));
}

}  // namespace cutune
