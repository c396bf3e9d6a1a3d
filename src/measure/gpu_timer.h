#pragma once
// Timing kernels on the GPU: the statistics that decide when a measurement is stable (pure,
// tested on the CPU) and the timers themselves (CUPTI activity records, see cupti_timer.h, or
// CUDA events as the fallback). Times are in seconds.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/records/measure_result.h"
#include "src/measure/worker_protocol.h"

namespace cutune {

// The median of `samples` with a distribution-free 95% confidence interval from order
// statistics (ranks n/2 -+ 1.96 sqrt(n)/2). rel_half_width = (hi - lo) / 2 / median; it is
// +inf for fewer than 3 samples or a zero median.
struct MedianCi {
  double median = 0, lo = 0, hi = 0;
  double rel_half_width = 0;
};
MedianCi median_ci(std::vector<double> samples);

enum class StopReason { none, stable, max_repeats, max_time, early_stop };
std::string_view to_string(StopReason reason);

// Whether to stop timing a candidate after `times` (every timed run so far, in order) and
// `elapsed_s` of wall time:
//   early_stop  - at least min_repeats runs and the median exceeds early_stop_factor x best;
//   stable      - at least min_repeats runs, min_seconds of kernel time summed, and the
//                 median's relative CI half-width under target_rel_ci;
//   max_repeats / max_time - the caps.
StopReason should_stop(const std::vector<double>& times, double elapsed_s,
                       const TimingOptions& options, double best_so_far_s);

// Times `repeats` runs of `launch`, calling `before_each` (the L2 flush) before each run,
// outside the timed region. A run may launch several kernels (a library call); its time is
// from the first kernel's start to the last one's end. `kernels_per_run`: how many kernels one
// run launches when the caller knows (1 for a candidate), 0 for a library call (any count, the
// same in every run). Throws CudaError when the device fails; the CUPTI timer throws
// std::runtime_error when its kernel records do not match the runs exactly (then the caller
// falls back to events and says so).
class KernelTimer {
 public:
  virtual ~KernelTimer() = default;
  virtual TimerKind kind() const = 0;
  virtual std::vector<double> time(const std::function<void()>& before_each,
                                   const std::function<void()>& launch, int repeats,
                                   int kernels_per_run = 0) = 0;
};

// What the CUPTI timer requires of the `records` kernel records it got for `repeats` runs of
// `kernels_per_run` kernels (0: unknown, any whole positive multiple of repeats): nullopt when
// they account for the runs exactly, else the one-line reason.
std::optional<std::string> cupti_record_problem(size_t records, int repeats, int kernels_per_run);

// cuEventRecord around each run on the default stream. Needs a current context.
std::unique_ptr<KernelTimer> make_event_timer();

// The CUPTI timer when `prefer_cupti` and CUPTI loads and enables kernel activity records;
// else the event timer. `why_not_cupti` receives the reason for a fallback.
std::unique_ptr<KernelTimer> make_kernel_timer(bool prefer_cupti, std::string* why_not_cupti);

}  // namespace cutune
