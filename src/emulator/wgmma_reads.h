#pragma once
// The shared memory that wgmmas in flight read. A wgmma reads its shared operands at some time
// between its issue and the wgmma.wait_group that completes its group; the emulator reads them
// at issue, so a write to those bytes before that wait (a ring slot released too early, then
// refilled by TMA, cp.async or a store) would go unseen there yet corrupt the product on a GPU.
// The block runner notes each wgmma's bytes here at issue, drops them at the wait that completes
// the group, and asks before every write to shared memory whether a wgmma still reads it.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace cutune::emu {

class WgmmaReads {
 public:
  struct Pending {
    unsigned warpgroup = 0;  // of the block
    uint64_t group = 0;      // the commit group: the warpgroup's commits before the issue
    int line = 0;            // of the wgmma
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // [begin, end) offsets, sorted, disjoint
  };

  // A wgmma of `warpgroup` in commit group `group` reads `count` elements of `element_bytes`
  // each at these offsets of the shared window (any order, repeats allowed).
  const Pending& add(unsigned warpgroup, uint64_t group, int line, const uint32_t* offsets,
                     size_t count, uint32_t element_bytes);
  // A wait of `warpgroup` completed every group below `complete_below`.
  void retire(unsigned warpgroup, uint64_t complete_below);
  // The first pending wgmma that reads a byte of [offset, offset + bytes), or null.
  const Pending* find(size_t offset, size_t bytes) const;
  // Whether `p` reads a byte of [offset, offset + bytes).
  static bool reads(const Pending& p, size_t offset, size_t bytes);
  bool empty() const { return pending_.empty(); }
  void clear() { pending_.clear(); }

 private:
  std::vector<Pending> pending_;
  std::vector<uint32_t> scratch_;
};

}  // namespace cutune::emu
