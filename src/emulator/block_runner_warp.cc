// BlockRunner's warp and warpgroup collectives (block_runner.h): the threads' calls, and
// their release once every lane waits at the same one.
#include "src/emulator/block_runner.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace cutune::emu {

void BlockRunner::warp_collective(cutune_emu_abi::Thread* self, cutune_emu_abi::WarpCollective fn,
                                  const char* name, void* args, unsigned mask, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  s->line = line;
  s->collective = fn;
  s->collective_name = name;
  s->collective_args = args;
  s->mask = mask;
  s->group_lanes = 32;
  suspend(s, State::at_warp);
}

void BlockRunner::warpgroup_collective(cutune_emu_abi::Thread* self,
                                       cutune_emu_abi::WarpCollective fn, const char* name,
                                       void* args, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  s->line = line;
  s->collective = fn;
  s->collective_name = name;
  s->collective_args = args;
  s->mask = ~0u;
  s->group_lanes = 128;
  suspend(s, State::at_warp);
}

BlockRunner::Failure BlockRunner::release_warp(size_t first, bool& released) {
  constexpr size_t kWarp = 32;
  size_t lanes = std::min(kWarp, slots_.size() - first);
  unsigned handled = 0;
  for (size_t i = 0; i < lanes; ++i) {
    Slot& lead = slots_[first + i];
    if (lead.state != State::at_warp || (handled >> i & 1u) != 0) continue;
    if (lead.group_lanes == 128) return release_warpgroup(first + i, released);
    unsigned mask = lead.mask;
    if ((mask >> i & 1u) == 0) {
      return {EmuStatus::crashed,
              fmt::format("block {} thread {}: {} on line {} with mask {:#010x}, which leaves "
                          "out the calling lane {}",
                          dim(lead.thread.block_idx), dim(lead.thread.thread_idx),
                          lead.collective_name, lead.line, mask, i)};
    }
    void* args[kWarp] = {};
    for (size_t j = 0; j < kWarp; ++j) {
      if ((mask >> j & 1u) == 0) continue;
      if (j >= lanes) {
        return {EmuStatus::barrier_divergence,
                fmt::format("barrier divergence in block {}: thread {} waits at {} on line {} "
                            "with mask {:#010x}, but its warp has only {} threads",
                            dim(lead.thread.block_idx), dim(lead.thread.thread_idx),
                            lead.collective_name, lead.line, mask, lanes)};
      }
      const Slot& other = slots_[first + j];
      if (other.state == State::at_mbarrier) return {};  // as in release_warpgroup
      if (other.state != State::at_warp || other.collective != lead.collective ||
          other.line != lead.line || other.mask != mask || other.group_lanes != 32) {
        return {EmuStatus::barrier_divergence, divergence(lead, other)};
      }
      args[j] = other.collective_args;
    }
    handled |= mask;
    const char* misuse = call_collective(lead, args, mask);
    if (misuse != nullptr) {
      return {EmuStatus::crashed,
              fmt::format("block {} warp {}: {} on line {}: {}", dim(lead.thread.block_idx),
                          first / kWarp, lead.collective_name, lead.line, misuse)};
    }
    for (size_t j = 0; j < lanes; ++j) {
      if ((mask >> j & 1u) != 0) slots_[first + j].state = State::ready;
    }
    if (sanitizer_ != nullptr && std::strcmp(lead.collective_name, "__syncwarp") == 0) {
      sanitizer_->warp_sync(static_cast<unsigned>(first / kWarp));
    }
    released = true;
  }
  return {};
}

BlockRunner::Failure BlockRunner::release_warpgroup(size_t index, bool& released) {
  constexpr size_t kGroup = 128;
  const size_t first = index / kGroup * kGroup;
  const Slot& lead = slots_[index];
  if (first + kGroup > slots_.size()) {
    return {EmuStatus::barrier_divergence,
            fmt::format("barrier divergence in block {}: thread {} waits at the warpgroup "
                        "operation {} on line {}, but its warpgroup has only {} threads",
                        dim(lead.thread.block_idx), dim(lead.thread.thread_idx),
                        lead.collective_name, lead.line, slots_.size() - first)};
  }
  void* args[kGroup] = {};
  for (size_t j = 0; j < kGroup; ++j) {
    const Slot& other = slots_[first + j];
    // A warp of the group still at a warp collective is released first, in this round; a
    // thread at an mbarrier is woken first once its phase completes (an elected thread that
    // waits for a slot's release while the others reach the wgmma), else it is a deadlock.
    if (other.state == State::at_warp && other.group_lanes == 32) return {};
    if (other.state == State::at_mbarrier) return {};
    // Released from a warp collective earlier in this round (an elect.sync before the
    // wgmma): it runs on before the group is looked at again.
    if (other.state == State::ready) return {};
    if (other.state != State::at_warp || other.collective != lead.collective ||
        other.line != lead.line) {
      return {EmuStatus::barrier_divergence, divergence(lead, other)};
    }
    args[j] = other.collective_args;
  }
  const char* misuse = call_collective(lead, args, ~0u);
  if (misuse != nullptr) {
    return {EmuStatus::crashed,
            fmt::format("block {} warpgroup {}: {} on line {}: {}", dim(lead.thread.block_idx),
                        first / kGroup, lead.collective_name, lead.line, misuse)};
  }
  for (size_t j = 0; j < kGroup; ++j) slots_[first + j].state = State::ready;
  released = true;
  return {};
}

}  // namespace cutune::emu
