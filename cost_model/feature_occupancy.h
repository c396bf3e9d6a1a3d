#pragma once
// A static estimate of how many thread blocks of a kernel one streaming multiprocessor holds
// at once, from the per-SM resources of a CUDA architecture (CUDA C Programming Guide, table
// "Technical Specifications per Compute Capability") and the kernel's threads, shared memory
// and registers per thread. Used as a feature, so it needs to rank kernels, not to match the
// occupancy calculator to the warp.

#include <cstdint>
#include <string_view>

namespace cutune::cost_model {

// Resources of one SM.
struct SmResources {
  int sm_count = 132;  // of the architecture's common data-centre part (H100/H200 for sm_90)
  int max_threads = 2048;
  int max_blocks = 32;
  int64_t shared_bytes = 228 * 1024;         // usable by blocks, per SM
  int64_t shared_reserved_per_block = 1024;  // the runtime's own per-block share (sm_80+)
  int registers = 65536;                     // 32-bit registers per SM
  int max_registers_per_thread = 255;
  int register_granularity = 256;  // registers are allocated per warp in these units
};

// The SM of an architecture named "sm_XY", from the one device description
// (src/target/device_info.h); an unknown name gets sm_90's.
SmResources sm_resources(std::string_view arch);

// Registers per thread a kernel with `local_bytes` of per-thread arrays (kept in registers
// when fully unrolled) plus a fixed allowance for addresses and loop state is estimated to
// use, capped at the architecture's maximum (beyond it the compiler spills).
int estimate_registers(int64_t local_bytes, const SmResources& sm);

struct Occupancy {
  int blocks_per_sm = 0;      // 0: the block does not fit at all
  double warps_fraction = 0;  // resident warps over the SM's maximum, in [0, 1]
};

Occupancy estimate_occupancy(const SmResources& sm, int64_t threads_per_block,
                             int64_t shared_bytes_per_block, int registers_per_thread);

}  // namespace cutune::cost_model
