#pragma once
// The worker's GPU backend, one for templates' and user kernels' tasks: one task's device state
// (context, the arguments made by their fill rule: seeded inputs, NaN or zero outputs, a user
// kernel's bytes, scalars and __constant__ values; the reference outputs; the L2 flush buffer,
// the timer) and the measurement of one candidate: load (filling constant memory, binding
// buffers, scalars and tensor maps), check against the reference, warm up, time until stable.
// Runs inside the worker process only, so a kernel that faults or hangs takes down nothing but
// the worker.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/records/measure_result.h"
#include "src/measure/gpu_timer.h"
#include "src/measure/worker_main.h"

namespace cutune {

// The task's baseline (WorkerTask::baseline) is set up with the task:
//   - a GEMM: cuBLAS (SGEMM with TF32 off for fp32; GemmEx with fp32 accumulation for 16-bit
//     tensors); with ReferenceKind::baseline its output is the reference;
//   - a convolution: cudnnFindConvolutionForwardAlgorithmEx (1 GiB workspace; FMA math only
//     for fp32, tensor-op math for 16-bit) on the task's own input and filter; the output of
//     the most accurate working algorithm (implicit GEMM before FFT/Winograd) must agree with
//     the parent's CPU reference and then becomes the reference every candidate is compared
//     with; the fastest algorithm is timed with the candidates' timer, warm-up, L2 flush and
//     stop rule, after 0.3 s of keeping the GPU busy. Every reply's extra then carries
//     baseline_s (median, seconds), baseline_algo, baseline_median_ci_s, baseline_runs,
//     baseline_timer, baseline_max_rel_error, cudnn_reference_algo,
//     cudnn_vs_cpu_max_rel_error;
//   - every reply says which reference checked it: extra.reference = cudnn | cpu | cublas |
//     file | reference kernel | none, and extra.cudnn_note why cuDNN was not used where it
//     was asked for.
// The other references (worker_protocol.h): a spec's expected-output file comes in the blob
// like a template's CPU reference; a spec's reference kernel runs once at setup on the initial
// arguments. A request with MeasureWhat::baseline times the baseline like a candidate (checked
// against the reference), for `cutune bench`.
std::unique_ptr<WorkerBackend> make_gpu_backend();

// How a failed driver call of a candidate is recorded. `at_launch`: cuLaunchKernel itself
// returned it (a refused launch, unless the error is a sticky one left by the kernel before).
// Sticky errors (illegal address, trap, misaligned access, ...) poison the context.
struct CudaFault {
  MeasureStatus status = MeasureStatus::runtime_error;
  bool poisoned = false;
};
CudaFault classify_cuda_error(int cu_result, bool at_launch);

// The timed rounds that end every GPU measurement (templates' kernels, baselines, user
// kernels): batches of runs, each after `before_each` (outside the timed interval), growing
// until should_stop. A CUPTI failure (an API error, or records that do not match the runs)
// switches `timer` to CUDA events and says why in `timer_note`. Fills result's times, timer,
// status ok and the statistics in extra; a failing run throws TimedRunFailure (the context is
// then poisoned). `kernels_per_run`: the kernels CUPTI must see per run, 0 for any number.
struct TimedRunFailure {
  MeasureStatus status;
  std::string error;
};
void run_timed_rounds(const TimingOptions& timing, std::unique_ptr<KernelTimer>& timer,
                      std::string& timer_note, const std::function<void()>& before_each,
                      const std::function<void()>& launch, double best_so_far_s,
                      int kernels_per_run, size_t l2_flush_bytes, MeasureResult& result);

}  // namespace cutune
