#pragma once
// The CUDA text of the cutune intrinsics (src/ir/intrinsics.h): the 16-bit storage typedefs,
// the inline-PTX definition of each device intrinsic, and the plain-C++ helpers that both
// NVRTC and the CPU emulator compile. The code generator emits only what a kernel uses.

#include <set>
#include <string>

namespace cutune {

// "typedef unsigned short cutune_half; ..." (always both: they are one line each).
std::string storage_typedefs();

// The definitions of the intrinsics named in `used` (other names are ignored): PTX ones inside
// one `#if defined(__CUDA_ARCH__) ... #endif` block, plain helpers after it. Empty when none.
std::string intrinsic_definitions(const std::set<std::string>& used);

}  // namespace cutune
