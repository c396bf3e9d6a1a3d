#pragma once
// The verifier: checks that a kernel can launch on a target before anything is compiled.
// - thread- and block-bound loops start at 0, and every loop bound to one hardware axis has
//   the same extent (that extent is the launch dimension);
// - block-bound loops enclose everything else (no block binding under another loop);
// - no Sync under a condition or loop bound that depends on the thread index (all threads of
//   a block must reach every barrier), nor a warp-collective intrinsic (mma, ldmatrix), nor a
//   warpgroup-collective one (wgmma, setmaxnreg), which also needs a multiple of 128 threads;
//   a condition that depends on the thread only through let-bound warpgroup indices
//   (threadIdx.x / 128·n, with a block x extent that is a multiple of 128) may hold
//   collectives (warp specialisation), but not a Sync;
// - sm_90a-only intrinsics (wgmma, setmaxnreg) only on an sm_90 / sm_90a target;
// - threads per block, block dimensions, grid dimensions and shared memory are within the
//   target's limits;
// - a load or store whose index is provably outside its buffer is an error.

#include <cstdint>
#include <string>
#include <vector>

#include "src/ir/ir.h"

namespace cutune::ir {

// The limits the verifier checks against (a device's, or a named architecture's).
struct TargetLimits {
  std::string arch = "sm_90";
  int max_threads_per_block = 1024;
  int max_block_dim[3] = {1024, 1024, 64};
  int64_t max_grid_dim[3] = {2147483647, 65535, 65535};
  int64_t max_static_shared_bytes = 48 * 1024;
  int64_t max_shared_bytes_optin = 227 * 1024;  // dynamic shared memory with the opt-in
  int64_t max_local_bytes_per_thread = 512 * 1024;
};

// Launch dimensions and memory the kernel needs, read off its bound loops and allocations.
struct LaunchShape {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t shared_bytes = 0;  // sum of shared allocations
  int64_t local_bytes = 0;   // sum of per-thread local arrays
  int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
  int64_t blocks() const { return grid[0] * grid[1] * grid[2]; }
};

struct VerifyResult {
  bool ok() const { return errors.empty(); }
  std::vector<std::string> errors;  // one line each
  LaunchShape launch;
};

VerifyResult verify(const Kernel& kernel, const TargetLimits& limits);

}  // namespace cutune::ir
