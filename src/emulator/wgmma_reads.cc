#include "src/emulator/wgmma_reads.h"

#include <algorithm>

namespace cutune::emu {

const WgmmaReads::Pending& WgmmaReads::add(unsigned warpgroup, uint64_t group, int line,
                                           const uint32_t* offsets, size_t count,
                                           uint32_t element_bytes) {
  scratch_.assign(offsets, offsets + count);
  std::sort(scratch_.begin(), scratch_.end());
  Pending p{warpgroup, group, line, {}};
  for (uint32_t o : scratch_) {
    if (!p.ranges.empty() && o <= p.ranges.back().second) {
      p.ranges.back().second = std::max(p.ranges.back().second, o + element_bytes);
    } else {
      p.ranges.emplace_back(o, o + element_bytes);
    }
  }
  pending_.push_back(std::move(p));
  return pending_.back();
}

void WgmmaReads::retire(unsigned warpgroup, uint64_t complete_below) {
  std::erase_if(pending_, [&](const Pending& p) {
    return p.warpgroup == warpgroup && p.group < complete_below;
  });
}

bool WgmmaReads::reads(const Pending& p, size_t offset, size_t bytes) {
  // The first range ending after `offset`: the only one that can start before its end.
  auto it = std::upper_bound(
      p.ranges.begin(), p.ranges.end(), offset,
      [](size_t o, const std::pair<uint32_t, uint32_t>& r) { return o < r.second; });
  return it != p.ranges.end() && it->first < offset + bytes;
}

const WgmmaReads::Pending* WgmmaReads::find(size_t offset, size_t bytes) const {
  for (const Pending& p : pending_) {
    if (reads(p, offset, bytes)) return &p;
  }
  return nullptr;
}

}  // namespace cutune::emu
