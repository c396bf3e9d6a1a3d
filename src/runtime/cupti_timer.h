#pragma once
// Kernel durations from CUPTI activity records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL): start
// and end as the GPU saw them, in ns, with no launch overhead or host jitter inside. libcupti
// is loaded at run time (dlopen), so nothing needs it to start; once enabled, kernel records
// stay enabled for the life of the process (CUPTI's activity state is process-wide).

#include <memory>
#include <string>

#include "src/runtime/gpu_timer.h"

namespace cutune {

// A CUPTI timer, or nullptr with the reason in `why_not` (library missing, a function
// missing, enabling the activity kind refused). Needs a current context for time().
std::unique_ptr<KernelTimer> make_cupti_timer(std::string* why_not);

// Loads a shared library by trying `names` with the default search (LD_LIBRARY_PATH, the
// cache) and then in the CUDA toolkit folders ($CUDA_HOME, /usr/local/cuda: lib64, lib,
// extras/CUPTI/lib64). nullptr with `error` set when none loads. Never unloaded.
void* open_cuda_library(const std::initializer_list<const char*>& names, std::string* error);

}  // namespace cutune
