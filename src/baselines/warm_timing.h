#pragma once
// How the baselines rank a library's algorithms: each run warm, back to back, timed with CUDA
// events on the default stream.

#include <functional>

namespace cutune {

// Runs `launch` `warmup` times (loading its modules, bringing the clocks up), then `runs` times
// between two CUDA events, and returns the mean seconds a run. CudaError from the driver or
// from `launch`.
double mean_warm_seconds(const std::function<void()>& launch, int warmup = 3, int runs = 10);

}  // namespace cutune
