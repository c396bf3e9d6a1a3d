#pragma once
// The GPU measurer: lowers each configuration of a template, compiles it with NVRTC (the next
// batch while the current one runs), runs it in a worker process on the GPU, times it and
// checks its output against a reference. Every failure is a result with its status.

#include <memory>
#include <string>

#include "kernels/template.h"
#include "src/tune/measurer.h"

namespace cutune {

struct GpuMeasureOptions {
  std::string arch;          // empty: the device's
  int device = 0;
  int compile_jobs = 2;
  bool flush_l2 = true;      // --no-flush turns it off
  double min_repeat_seconds = 0.05;
  int max_repeats = 200;
  double target_rel_ci = 0.01;
  double timeout_seconds = 10;
};

// Throws NoDeviceError ("no CUDA device found") where there is no usable GPU.
std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl, const GpuMeasureOptions& options);

}  // namespace cutune
