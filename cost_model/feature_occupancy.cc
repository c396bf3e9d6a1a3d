#include "cost_model/feature_occupancy.h"

#include <algorithm>
#include <charconv>

namespace cutune::cost_model {

namespace {

// Address arithmetic, loop counters and the thread's coordinates take roughly this many
// registers in the kernels cutune generates, on top of the arrays.
constexpr int kBaseRegisters = 24;

int compute_capability(std::string_view arch) {
  if (arch.starts_with("sm_")) arch.remove_prefix(3);
  int cc = 0;
  auto [end, ec] = std::from_chars(arch.data(), arch.data() + arch.size(), cc);
  return ec == std::errc() ? cc : 0;
}

}  // namespace

SmResources sm_resources(std::string_view arch) {
  SmResources sm;
  switch (compute_capability(arch)) {
    case 70:
    case 72:
      sm.sm_count = 80;
      sm.shared_bytes = 96 * 1024;
      sm.shared_reserved_per_block = 0;
      break;
    case 75:
      sm.sm_count = 40;
      sm.max_threads = 1024;
      sm.max_blocks = 16;
      sm.shared_bytes = 64 * 1024;
      sm.shared_reserved_per_block = 0;
      break;
    case 80:
    case 87:
      sm.sm_count = 108;
      sm.shared_bytes = 164 * 1024;
      break;
    case 86:
      sm.sm_count = 84;
      sm.max_threads = 1536;
      sm.max_blocks = 16;
      sm.shared_bytes = 100 * 1024;
      break;
    case 89:
      sm.sm_count = 128;
      sm.max_threads = 1536;
      sm.max_blocks = 24;
      sm.shared_bytes = 100 * 1024;
      break;
    default:
      break;
  }
  return sm;
}

int estimate_registers(int64_t local_bytes, const SmResources& sm) {
  int64_t regs = kBaseRegisters + (local_bytes + 3) / 4;
  return int(std::min<int64_t>(regs, sm.max_registers_per_thread));
}

Occupancy estimate_occupancy(const SmResources& sm, int64_t threads_per_block,
                             int64_t shared_bytes_per_block, int registers_per_thread) {
  Occupancy out;
  if (threads_per_block <= 0 || threads_per_block > sm.max_threads) return out;
  int64_t warps = (threads_per_block + 31) / 32;
  int64_t by_threads = sm.max_threads / (warps * 32);
  int64_t by_shared = sm.max_blocks;
  if (shared_bytes_per_block > 0) {
    by_shared = sm.shared_bytes / (shared_bytes_per_block + sm.shared_reserved_per_block);
  }
  int64_t regs_per_warp = int64_t{registers_per_thread} * 32;
  regs_per_warp = (regs_per_warp + sm.register_granularity - 1) / sm.register_granularity *
                  sm.register_granularity;
  int64_t by_registers = regs_per_warp > 0 ? sm.registers / (regs_per_warp * warps) : sm.max_blocks;
  int64_t blocks = std::min({int64_t{sm.max_blocks}, by_threads, by_shared, by_registers});
  out.blocks_per_sm = int(std::max<int64_t>(blocks, 0));
  out.warps_fraction = double(out.blocks_per_sm * warps * 32) / double(sm.max_threads);
  return out;
}

}  // namespace cutune::cost_model
