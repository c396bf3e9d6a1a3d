#include "cost_model/feature_occupancy.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "src/target/device_info.h"

namespace cutune::cost_model {

namespace {

// Address arithmetic, loop counters and the thread's coordinates take roughly this many
// registers in the kernels cutune generates, on top of the arrays.
constexpr int kBaseRegisters = 24;

}  // namespace

SmResources sm_resources(std::string_view arch) {
  DeviceInfo d;
  try {
    d = target_limits(std::string(arch));
  } catch (const std::invalid_argument&) {
    d = target_limits("sm_90");
  }
  SmResources sm;
  sm.sm_count = d.sm_count;
  sm.max_threads = d.max_threads_per_sm;
  sm.max_blocks = d.max_blocks_per_sm;
  sm.shared_bytes = d.max_shared_per_sm;
  sm.shared_reserved_per_block = d.reserved_shared_per_block;
  sm.registers = d.regs_per_sm;
  sm.max_registers_per_thread = d.max_regs_per_thread;
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
