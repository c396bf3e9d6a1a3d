#pragma once
// The CUDA text of the Hopper warpgroup intrinsics (src/ir/hopper_intrinsics.h): inline PTX for
// sm_90a, generated per name because the wgmma shapes are many (N = 8..256 for each input type
// and operand layout).

#include <optional>
#include <string>

namespace cutune {

// The __device__ definition of Hopper intrinsic `name` (to go inside the code generator's
// `#if defined(__CUDA_ARCH__)` block), or nullopt when `name` is not one.
std::optional<std::string> hopper_ptx_definition(const std::string& name);

// The descriptor helpers of src/ir/wgmma_descriptor.h, verbatim, which the PTX definitions use;
// emitted once ahead of them.
const std::string& wgmma_descriptor_text();

}  // namespace cutune
