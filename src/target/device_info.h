#pragma once
// The one description of a GPU that every stage uses: the verifier's launch limits, the cost
// model's occupancy arithmetic and the measuring worker all read a DeviceInfo. It comes either
// from a present device (src/runtime/device.h asks the driver) or, with no device, from the
// table of documented per-architecture limits below. Plain data: nothing here needs CUDA.

#include <cstdint>
#include <string>
#include <vector>

#include "src/ir/verify.h"

namespace cutune {

// Units: bytes for memory sizes, kHz for clocks, bits for the memory bus, 32-bit registers.
struct DeviceInfo {
  int ordinal = -1;  // driver device index; -1 for a target_limits() model
  std::string name;
  int cc_major = 0, cc_minor = 0;  // compute capability
  int sm_count = 0;
  int max_threads_per_block = 0;
  int max_shared_per_block = 0;        // static __shared__ limit without opt-in (48 KiB)
  int max_shared_per_block_optin = 0;  // with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)
  int max_shared_per_sm = 0;
  int reserved_shared_per_block = 0;  // taken by the system from each block's SM share
  int regs_per_block = 0;
  int regs_per_sm = 0;
  int max_regs_per_thread = 255;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int warp_size = 32;
  int l2_bytes = 0;
  int clock_khz = 0;      // peak SM clock
  int mem_clock_khz = 0;  // peak memory clock
  int mem_bus_width = 0;
  uint64_t total_mem = 0;

  // "sm_90" for compute capability 9.0.
  std::string arch() const;
};

// The documented limits of a named architecture ("sm_90"; a trailing "a" or "f" is accepted),
// for planning without a device. The per-block, per-SM and per-thread limits are the
// architecture's own; sm_count, clocks, L2, bus and memory size are those of one
// representative part (named in `name`) and only stand in for a real device.
// Known: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120. Anything else throws
// std::invalid_argument with a one-line message listing the known names.
DeviceInfo target_limits(const std::string& arch);

// The architectures target_limits() knows, ascending.
std::vector<std::string> known_archs();

// What the verifier may assume of `device`: its threads per block and shared memory, static
// shared memory capped at the 48 KiB a kernel may declare without opting in.
ir::TargetLimits verifier_limits(const DeviceInfo& device);

// verifier_limits of target_limits(arch), for planning without a device.
ir::TargetLimits verifier_limits(const std::string& arch);

}  // namespace cutune
