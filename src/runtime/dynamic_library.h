#pragma once
// Finding and loading the CUDA libraries at run time, so that a binary starts on a machine
// without them and says which one is missing.

#include <initializer_list>
#include <string>

namespace cutune {

// Loads a shared library by trying `names` with the default search (LD_LIBRARY_PATH, the
// cache) and then in the CUDA toolkit folders ($CUDA_HOME, /usr/local/cuda: lib64, lib,
// extras/CUPTI/lib64). nullptr with `error` set when none loads. Never unloaded.
void* open_cuda_library(const std::initializer_list<const char*>& names, std::string* error);

}  // namespace cutune
