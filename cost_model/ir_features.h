#pragma once
// The layout of the IR feature vector (make_ir_features in features.h).
//
// The vector is a concatenation of slots, fixed by the template, never by one configuration:
//   for each loop name of the template, in its order:    kLoopFeatures
//   for each buffer name of the template, in its order:  kBufferFeatures
//   once:                                                kKernelFeatures
// A feature is named "<slot>.<feature>", e.g. "loop.k_outer.trips", "buffer.A.stride_tx",
// "kernel.occupancy". A loop or buffer a configuration's IR lacks gets the features of an
// extent-1 serial loop (extent 1, trips 0, serial 1) or of an absent buffer (zeros, with
// warp_efficiency 1). A name that appears as several loops sums trips and operations and takes the
// largest of the rest.
//
// Scaling: counts, sizes, strides and ratios are log2(1 + x); one-hot flags, the occupancy
// fraction and the warp and wave efficiencies are in [0, 1] as they are. Units: bytes; strides in
// elements. Per-thread, per-block and total (per launch) quantities are named so.
//
// Schema: "ir/v1:<template name>:<hash of the feature names>", so a model transfers between
// shapes of a template and is refused for another template or layout version.
//
// A configuration the template cannot build (it throws ir::IRError) gets NaN in every slot:
// missing values, as XGBoost reads them.

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace cutune {
class Template;
}

namespace cutune::cost_model {

inline constexpr std::array<std::string_view, 16> kLoopFeatures = {
    "extent",  // the loop's extent
    "trips",   // iterations per launch (all threads)
    "depth",   // enclosing loops
    "outer",   // product of the enclosing loops' extents
    "inner",   // product of the extents nested inside
    "serial",  // annotation one-hot (several for a name used with several kinds)
    "unrolled",  "vectorized", "block_x", "block_y", "block_z", "thread_x", "thread_y", "thread_z",
    "float_ops",  // float operations in its own body, per launch
    "int_ops",    // integer and logic operations in its own body, per launch
};

inline constexpr std::array<std::string_view, 20> kBufferFeatures = {
    "global",  // scope one-hot
    "shared",
    "local",
    "allocated",       // size (per block for shared, per thread for local)
    "touched_thread",  // bytes read or written, each time counted
    "touched_block",
    "touched_total",
    "distinct_thread",  // distinct bytes
    "distinct_block",
    "distinct_total",
    "reuse",              // touched_total / distinct_total
    "stride_inner",       // of the busiest access: per step of the innermost unbound loop
    "stride_tx",          // per step of threadIdx.x
    "lanes",              // its vector width
    "warp_transactions",  // sectors (global) or wavefronts (shared) one warp needs
    "warp_efficiency",    // the fewest possible over warp_transactions (1 when unused)
    "warp_bytes",         // distinct bytes the first warp touches in that access
    "loads",              // accesses per launch
    "stores",
    "bytes_per_flop",  // touched_total over the kernel's float operations
};

inline constexpr std::array<std::string_view, 31> kKernelFeatures = {
    "threads_per_block", "blocks",
    "shared_bytes",     // per block
    "local_bytes",      // per thread
    "registers",        // estimated per thread
    "blocks_per_sm",    // estimated for the target
    "occupancy",        // resident warps over the SM's maximum
    "waves",            // rounds of resident blocks the grid takes on the whole GPU
    "wave_efficiency",  // blocks over the slots those rounds offer, in (0, 1]
    "float_ops",        // per launch
    "int_ops",
    "global_bytes",  // touched in global memory, per launch
    "global_distinct_bytes", "shared_bytes_touched",
    "arithmetic_intensity",  // float_ops / global_bytes
    "compulsory_intensity",  // float_ops / global_distinct_bytes
    "syncs_per_thread",
    "int_per_float",  // int_ops / float_ops: index overhead
    // Tensor-core kernels (0, and pipeline depth 1, for the others). An mma counts as its
    // 4096 flops in float_ops as well.
    "mma_ops",           // warp-level mma.m16n8k16 instructions, per launch
    "async_copy_bytes",  // global->shared bytes moved by cp.async, per launch
    "pipeline_depth",    // shared-memory stages of the cp.async ring
    "bytes_in_flight",   // per block: average cp.async bytes of a commit group (empty tail
                         // groups included) times (depth - 1)
    "min_blocks",        // __launch_bounds__' blocks per SM (0: none); it caps the registers
    // TMA loads (0 for kernels without them).
    "tma_copy_bytes",       // global->shared bytes moved by TMA boxes, per launch
    "tma_share",            // TMA's share of the global->shared copy bytes (cp.async the rest)
    "tma_stages",           // ring slots the copies complete on (their mbarriers)
    "tma_bytes_in_flight",  // per block: one slot's expect_tx bytes times (stages - 1)
    "warp_specialized",     // 1 with a producer warpgroup (setmaxnreg), else 0
    "mma_in_flight",        // wgmma groups left unfinished at a wait (wait_group N: the most N)
    // Persistent kernels (ir::Kernel::persistent_blocks_per_sm): `blocks` is the grid the
    // launch takes on the target's SMs (launch_grid.h), `waves` the rounds of tiles it walks,
    // `wave_efficiency` tiles over the slots of those rounds (before any split of the last
    // one, which the knob features carry). 1 for other kernels, whose blocks are their tiles
    // (a static tiles_per_block shows in loop.tile_t).
    "tiles_per_block",  // tiles (the block_x extent) over the blocks launched
    // Thread-block clusters (ir::Kernel::cluster_x; 1 without): the blocks that share an
    // operand's slice by multicast TMA. The L2 bytes that saves are in tma_copy_bytes already
    // (each block's boxes of the shared slice are half of it).
    "cluster_size",
};

// The loop and buffer names a template's vector has slots for: the ones it declares
// (Template::loop_names/buffer_names), or else the union over the IR of its reference
// configurations and a fixed-seed sample of valid ones, sorted by name.
struct SlotNames {
  std::vector<std::string> loops;
  std::vector<std::string> buffers;
};
SlotNames slot_names(const Template& tmpl);

}  // namespace cutune::cost_model
