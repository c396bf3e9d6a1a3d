#pragma once
// IR to CUDA C. The output is one self-contained translation unit (no #include) with an
// extern "C" __global__ kernel, written to be read: indented, the template's own names, C's
// `/` and `%` wherever both operands are provably non-negative.
//
// A loop bound to threadIdx/blockIdx emits no loop: its variable is declared once at the top
// of the kernel as `const int tx = threadIdx.x;`, and its extent is the launch dimension
// (the verifier has checked that every loop bound to one axis agrees). Shared allocations are
// static `__shared__` arrays up to 48 KiB in total, and carved out of one dynamic
// `extern __shared__` array above that (the launch then needs the opt-in).

#include "src/codegen/cuda_source.h"
#include "src/ir/ir.h"
#include "src/ir/verify.h"

namespace cutune {

// `kernel` should be simplified and verified; an unverifiable kernel is an IRError.
CudaSource generate_cuda(const ir::Kernel& kernel, const ir::LaunchShape& launch);

}  // namespace cutune
