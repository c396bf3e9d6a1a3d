#pragma once
// The generated text compiled after a kernel: it includes the kernel source unchanged,
// defines the dynamic shared-memory array that the kernel declares `extern __shared__`, checks
// at compile time that the kernel's parameters agree with the CudaSource's, and exports the
// entry points of device_abi.h.

#include <string>

#include "src/codegen/cuda_source.h"

namespace cutune::emu {

struct Postlude {
  std::string text;
  std::string error;  // non-empty: the kernel uses something the emulator cannot provide
};

// `kernel_file` is the name, relative to the postlude's own file, of the kernel source.
// With `sanitize`, the postlude also puts a red zone after the dynamic shared array (named as
// sanitized_kernel_source renames it) and exports the table of shared arrays (device_abi.h's
// SharedArrayInfo).
Postlude make_postlude(const CudaSource& src, const std::string& kernel_file,
                       bool sanitize = false);

// The kernel source as the sanitizer compiles it, every line number kept:
//  - after each static `__shared__` declaration, on the same line, a 128-byte thread-local
//    red zone that no code touches: an access that runs off the end of an array (or off the
//    start of the next) lands there and is reported as out of bounds;
//  - each block-scope shared array is renamed (kSharedStoragePrefix + name) and its name
//    becomes a pointer to it that the compiler cannot see through (cutune_emu_opaque): the
//    instrumentation leaves out accesses at constant offsets into a thread-local variable, and
//    through the pointer there are none.
std::string sanitized_kernel_source(const std::string& code);
inline constexpr const char* kSharedStoragePrefix = "cutune_emu_shared_";

}  // namespace cutune::emu
