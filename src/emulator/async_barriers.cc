#include "src/emulator/async_barriers.h"

#include <fmt/format.h>

namespace cutune::emu {

namespace {

constexpr int64_t kMaxCount = (int64_t{1} << 20) - 1;  // arrival and tx-count range (PTX ISA)

}  // namespace

std::string AsyncBarriers::init(const void* bar, int count) {
  if (count < 1 || count > kMaxCount) {
    return fmt::format("mbarrier init with count {} (must be 1..{})", count, kMaxCount);
  }
  Barrier& b = barriers_[bar];
  b = Barrier{};
  b.expected = b.pending = static_cast<uint32_t>(count);
  return "";
}

std::string AsyncBarriers::maybe_complete(Barrier& b) {
  if (b.pending != 0 || b.tx != 0) return "";
  if (b.in_flight > 0) {
    return fmt::format(
        "mbarrier phase {} completed with {} bytes of TMA copies issued in it still in flight "
        "(the expect_tx count is too small)",
        b.phase, b.in_flight);
  }
  ++b.phase;
  b.pending = b.expected;
  b.in_flight = 0;
  ++completions_;
  return "";
}

std::string AsyncBarriers::arrive(const void* bar, int count, int tx) {
  auto it = barriers_.find(bar);
  if (it == barriers_.end()) return "mbarrier arrive on a barrier that is not initialised";
  Barrier& b = it->second;
  if (tx < 0 || b.tx + tx > kMaxCount) {
    return fmt::format("mbarrier expect_tx of {} bytes takes the tx-count from {} out of range", tx,
                       b.tx);
  }
  if (count < 0 || static_cast<uint32_t>(count) > b.pending) {
    return fmt::format("mbarrier arrive of {} with {} of {} arrivals pending in phase {}", count,
                       b.pending, b.expected, b.phase);
  }
  b.tx += tx;
  b.pending -= static_cast<uint32_t>(count);
  return count > 0 ? maybe_complete(b) : std::string();
}

std::string AsyncBarriers::complete_tx(const void* bar, int64_t bytes) {
  auto it = barriers_.find(bar);
  if (it == barriers_.end()) return "a TMA copy completed on a barrier that is no longer valid";
  Barrier& b = it->second;
  b.in_flight -= bytes;
  b.tx -= bytes;
  if (b.tx < -kMaxCount) {
    return fmt::format("mbarrier tx-count fell to {} (expect_tx counted too few bytes)", b.tx);
  }
  return maybe_complete(b);
}

std::string AsyncBarriers::note_issue(const void* bar, int64_t bytes) {
  auto it = barriers_.find(bar);
  if (it == barriers_.end()) return "TMA copy signals a barrier that is not initialised";
  it->second.in_flight += bytes;
  return "";
}

std::string AsyncBarriers::inval(const void* bar) {
  if (barriers_.erase(bar) == 0) return "mbarrier inval of a barrier that is not initialised";
  return "";
}

const AsyncBarriers::Barrier* AsyncBarriers::find(const void* bar) const {
  auto it = barriers_.find(bar);
  return it == barriers_.end() ? nullptr : &it->second;
}

bool AsyncBarriers::phase_done(const void* bar, int parity) const {
  const Barrier* b = find(bar);
  return b != nullptr && static_cast<int>(b->phase & 1u) != (parity & 1);
}

std::string AsyncBarriers::describe(const void* bar) const {
  const Barrier* b = find(bar);
  if (b == nullptr) return "not initialised";
  return fmt::format("phase {}, {} of {} arrivals pending, tx-count {} bytes", b->phase, b->pending,
                     b->expected, b->tx);
}

void AsyncBarriers::clear() {
  barriers_.clear();
  completions_ = 0;
}

}  // namespace cutune::emu
