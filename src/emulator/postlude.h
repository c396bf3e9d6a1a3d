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
Postlude make_postlude(const CudaSource& src, const std::string& kernel_file);

}  // namespace cutune::emu
