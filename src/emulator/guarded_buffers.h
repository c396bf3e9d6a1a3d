#pragma once
// Global buffers laid out so that a kernel's out-of-bounds accesses are caught.
//
// Each pointer parameter's buffer gets its own mapping: an inaccessible guard page, the data
// pages, another guard page. The data ends flush against the trailing guard, its size rounded
// up to 16 bytes so float4 accesses stay aligned; the few slack bytes after the data and the
// gap before it are filled with a canary byte. So an access past the end faults (or, within
// the slack, changes the canary), as does one far enough before the start; a read of the gap
// before the start goes unseen. The mappings are shared, so what a forked child writes is
// what the parent reads back.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/emulator/host_buffer.h"

namespace cutune::emu {

class GuardedBuffers {
 public:
  // One buffer per pointer parameter of `src`, in order; each must have exactly the
  // parameter's element type and count.
  GuardedBuffers(const CudaSource& src, const std::vector<HostBuffer>& buffers);
  ~GuardedBuffers();
  GuardedBuffers(const GuardedBuffers&) = delete;
  GuardedBuffers& operator=(const GuardedBuffers&) = delete;

  size_t size() const { return regions_.size(); }
  void* data(size_t i) const { return regions_[i].data; }
  const std::string& name(size_t i) const { return regions_[i].name; }
  int64_t elements(size_t i) const { return regions_[i].elements; }

  // The whole mapping of buffer i, guard pages included, and what the sanitizer needs of it.
  struct Extent {
    const std::byte* map_begin;
    size_t map_bytes;
    bool is_const;
    int element_bytes;
  };
  Extent extent(size_t i) const {
    const Region& r = regions_[i];
    return {r.base, r.map_bytes, r.is_const, r.element_bytes};
  }

  // Makes the buffers of const parameters read-only in the calling process (the child), so a
  // write through a cast-away const faults too.
  void protect_read_only() const;

  // Where an address lies: in which buffer's mapping, at which element index (negative
  // before the start, >= elements() past the end). Async-signal-safe.
  struct Location {
    size_t buffer = 0;
    int64_t element = 0;
  };
  std::optional<Location> locate(const void* address) const noexcept;

  // The first canary byte that no longer holds the canary, as a location.
  std::optional<Location> overwritten_canary() const;

  // Copies the non-const buffers back into `buffers`.
  void copy_out(std::vector<HostBuffer>& buffers) const;

 private:
  struct Region {
    std::string name;
    bool is_const = false;
    int element_bytes = 1;
    int64_t elements = 0;
    std::byte* base = nullptr;  // the mapping, guards included
    size_t map_bytes = 0;
    std::byte* data = nullptr;
    size_t padded_bytes = 0;  // data size rounded up to 16
  };
  std::vector<Region> regions_;
  size_t page_ = 4096;
};

}  // namespace cutune::emu
