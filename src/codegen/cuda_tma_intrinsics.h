#pragma once
// The CUDA text of the mbarrier and TMA intrinsics (src/ir/tma_intrinsics.h): the tensor-map
// parameter type and the inline-PTX definition of each intrinsic a kernel uses. Like the
// tensor-core intrinsics they sit inside `#if defined(__CUDA_ARCH__)`; the CPU emulator's prelude
// defines the same names (src/emulator/device_prelude_tma.h).

#include <set>
#include <string>

namespace cutune {

// The definitions of the TMA intrinsics named in `used` (others are ignored), and with
// `tensor_maps` the 128-byte, 64-byte aligned `cutune_tensor_map` parameter type, in one
// `#if defined(__CUDA_ARCH__) ... #endif` block. Empty when neither is needed.
std::string tma_intrinsic_definitions(const std::set<std::string>& used, bool tensor_maps);

}  // namespace cutune
