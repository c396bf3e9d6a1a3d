#pragma once
// The worker's GPU backend: one task's device state (context, tensors with fixed-seed inputs,
// the reference output, the L2 flush buffer, the timer) and the measurement of one candidate:
// load, check against the reference, warm up, time until stable. Runs inside the worker
// process only, so a kernel that faults or hangs takes down nothing but the worker.

#include <memory>

#include "src/records/measure_result.h"
#include "src/runtime/worker_main.h"

namespace cutune {

std::unique_ptr<WorkerBackend> make_gpu_backend();

// How a failed driver call of a candidate is recorded. `at_launch`: cuLaunchKernel itself
// returned it (a refused launch, unless the error is a sticky one left by the kernel before).
// Sticky errors (illegal address, trap, misaligned access, ...) poison the context.
struct CudaFault {
  MeasureStatus status = MeasureStatus::runtime_error;
  bool poisoned = false;
};
CudaFault classify_cuda_error(int cu_result, bool at_launch);

}  // namespace cutune
