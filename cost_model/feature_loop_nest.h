#pragma once
// A light static analysis of a kernel's loop nest, for feature extraction: one pass over the
// IR as the template built it (unsimplified), with no simplification and no enumeration of
// iterations, so that it runs in microseconds. Value ranges are the IR's interval bounds
// (src/ir/bounds.h) over the enclosing loops and lets (cost_model/loop_scope.h).
//
// Conventions:
// - Counts are per launch unless named otherwise: a loop's trips and the operations charged
//   to it are summed over every thread of the grid.
// - A condition is assumed true for the fraction of iterations estimated from the ranges of
//   its operands, taken as uniform over their intervals (so a tail guard `row < 127` over rows
//   0..127 holds 127/128 of the time); the else branch gets the rest. Both branches count,
//   each weighted by its fraction.
// - A loop whose extent is not a constant runs its upper bound's iterations as far as ranges
//   go (the loop variable, the loop slot's `extent`), but its work counts at the mean trip
//   count where the extent varies with one enclosing loop of at most 32 iterations, averaged
//   over that loop's values: a split-K block's share of the K slices, uneven where the splits
//   do not divide them. Otherwise at the bound.
// - An address argument is an access of the width the intrinsic moves: cp.async's source
//   (a global load) and destination (a shared store) of N bytes, ldmatrix.xC's row address
//   (a shared load of 4·C bytes a lane, on average); any other counts one element.
// - Distinct elements an access touches are the product of the extents of the loops its
//   index depends on (directly or through let-bound names), times its vector width, capped by
//   the buffer's size (the approximation AutoTVM's touch features make): exact for the affine
//   indices of tiled kernels, an over-estimate where div/mod fold iterations together.
// - Strides are index differences, in elements, between the loop variable at 1 and at 0 with
//   every other loop variable at 0; warp behaviour evaluates the index for threadIdx.x = 0..31
//   likewise.
// - Names outside the given slot lists are ignored; a slot nothing in the IR maps to keeps
//   its default (`seen` false).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/ir/ir.h"

namespace cutune::cost_model {

struct LoopSlotStats {
  bool seen = false;
  double extent = 1;   // the largest extent among loops of this name
  double trips = 0;    // iterations over the whole launch, summed over loops of this name
  double depth = 0;    // enclosing loops (bound ones included), the largest
  double outer = 1;    // product of the enclosing loops' extents, the largest
  double inner = 1;    // product of the extents along the deepest nest inside, the largest
  uint16_t kinds = 0;  // bit (1 << ForKind) for each kind this name was seen with
  double float_ops =
      0;               // float arithmetic in the loop's own body (not in nested loops), per launch
  double int_ops = 0;  // integer and logic arithmetic, likewise
};

struct BufferSlotStats {
  bool seen = false;
  ir::MemoryScope scope = ir::MemoryScope::global;
  double allocated_bytes = 0;  // the buffer's size (per thread for local, per block for shared)
  // Bytes read or written (each access counted every time it runs).
  double touched_thread = 0, touched_block = 0, touched_total = 0;
  // Distinct bytes touched, summed over the buffer's accesses and capped by its size.
  double distinct_thread = 0, distinct_block = 0, distinct_total = 0;
  // Of the access that moves the most bytes: index stride per iteration of the innermost
  // enclosing unbound loop (0 if the index does not depend on it), per step of threadIdx.x,
  // and its vector width.
  double stride_inner = 0, stride_thread_x = 0;
  int lanes = 1;
  // Of the same access, executed by the 32 lanes of the first warp (other loop variables at
  // 0): global buffers, the 32-byte sectors it touches; shared buffers, the wavefronts it
  // needs: the warp's lanes go to the banks in phases of 128 bytes of requests (all 32 lanes
  // for 4-byte accesses, half-warps for 8-byte ones, quarter-warps for 16-byte ones), each
  // phase taking as many wavefronts as the most distinct 4-byte words in one of the 32 banks,
  // at least one per 128 distinct bytes. `warp_ideal` is the fewest the same number of
  // distinct bytes could take,
  // so warp_ideal / warp_transactions is the coalescing (or bank-conflict) efficiency. Both 0
  // for local buffers.
  double warp_transactions = 0, warp_ideal = 0;
  double warp_bytes = 0;  // distinct bytes the first warp's lanes touch (less: more broadcast)
  double loads = 0, stores = 0;  // accesses per launch, by direction
};

struct KernelStats {
  double threads_per_block = 1;
  double blocks = 1;
  double shared_bytes = 0;  // sum of shared allocations, per block
  double local_bytes = 0;   // sum of local arrays, per thread
  double float_ops = 0;     // per launch
  double int_ops = 0;       // per launch
  double syncs_per_thread = 0;
  // Tensor-core kernels (src/ir/intrinsics.h); all 0 elsewhere, pipeline_depth 1.
  double mma_ops = 0;                   // warp-level mma.m16n8k16 instructions per launch
  double async_copy_bytes = 0;          // bytes moved by cp.async, per launch
  double async_commits_per_thread = 0;  // cp.async groups each thread commits
  double pipeline_depth = 1;            // shared-memory stages: the largest wait_group N + 2
  int min_blocks = 0;                   // ir::Kernel::min_blocks (__launch_bounds__)
  int persistent_blocks_per_sm = 0;     // ir::Kernel's: `blocks` is then the tiles it walks
  int cluster_x = 1;                    // ir::Kernel's: blocks a thread-block cluster
  // TMA (src/ir/tma_intrinsics.h); 0 elsewhere.
  double tma_copy_bytes = 0;      // global->shared bytes of the tensor-map boxes, per launch
  double tma_stages = 0;          // mbarriers the copies complete on (the ring's slots)
  double tma_stage_bytes = 0;     // the largest constant expect_tx: bytes one slot brings
  bool warp_specialized = false;  // setmaxnreg (a producer warpgroup)
  double mma_in_flight = 0;       // the largest N of a wgmma.wait_group N
};

struct LoopNestSummary {
  std::vector<LoopSlotStats> loops;      // in the order of the loop names given
  std::vector<BufferSlotStats> buffers;  // in the order of the buffer names given
  KernelStats kernel;
};

// Analyses `kernel` into one stats entry per named loop and buffer. Pure: safe to call from
// several threads at once.
void summarize_loop_nest(const ir::Kernel& kernel, std::span<const std::string> loop_names,
                         std::span<const std::string> buffer_names, LoopNestSummary& out);

}  // namespace cutune::cost_model
