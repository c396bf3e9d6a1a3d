#pragma once
// Kernel durations from CUPTI activity records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL): start
// and end as the GPU saw them, in ns, with no launch overhead or host jitter inside. libcupti
// is loaded at run time (dlopen), so nothing needs it to start; once enabled, kernel records
// stay enabled for the life of the process (CUPTI's activity state is process-wide).

#include <memory>
#include <string>

#include "src/measure/gpu_timer.h"

namespace cutune {

// A CUPTI timer, or nullptr with the reason in `why_not` (library missing, a function
// missing, enabling the activity kind refused). Needs a current context for time().
std::unique_ptr<KernelTimer> make_cupti_timer(std::string* why_not);

}  // namespace cutune
