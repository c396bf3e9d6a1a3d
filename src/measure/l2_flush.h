#pragma once
// Evicts the L2 cache between timed runs by writing a device buffer at least twice its size,
// so every timed run starts from cold L2 as a kernel in a real model would. The write is a
// driver memset on the timing stream, issued before the timed region and never inside it.

#include <cstddef>
#include <cstdint>

#include "src/runtime/cuda_module.h"

namespace cutune {

// Bytes to write for an L2 of `l2_bytes`: twice that, at least 8 MiB (a device that reports
// no L2 still gets a flush), rounded up to 4 bytes.
size_t l2_flush_bytes(int64_t l2_bytes);

class L2Flusher {
 public:
  // Allocates l2_flush_bytes(l2_bytes) in the current context.
  explicit L2Flusher(int64_t l2_bytes);
  // Writes the whole buffer (asynchronously, in stream order), a different value each time.
  void flush(CUstream stream = nullptr);
  size_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_;
  uint32_t value_ = 0;
};

}  // namespace cutune
