#pragma once
// What the GPU measurer measures, whether a template's lowering or a user's spec makes it:
// once per task, what the worker sets up (the arguments with their fill rule, the reference
// rule, the baseline); for each configuration, a kernel instance (its CUDA C with the launch,
// and the task argument each kernel parameter takes) or why the configuration cannot run.
// src/measure/template_task.h makes one from a template, src/spec/spec_kernel_task.h from a
// user's spec; src/measure/gpu_measurer.h measures either the same way.

#include <optional>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/ir/tensor_map.h"
#include "src/ir/verify.h"
#include "src/measure/worker_protocol.h"
#include "src/runtime/device.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/space/config_space.h"

namespace cutune {

// How the GPU measurer compiles, runs and times. The worker's share is timing_options().
struct GpuMeasureOptions {
  std::string arch;  // empty: the device's
  int device = 0;
  // GPUs to measure on, one worker each (src/measure/worker_pool.h); empty: {device}. Each
  // result's details say which one measured it (gpu.device: the ordinal).
  std::vector<int> devices;
  int compile_jobs = 2;
  bool flush_l2 = true;              // --no-flush turns it off
  double min_repeat_seconds = 0.01;  // kernel time summed before a stable median may stop
  int max_repeats = 200;
  double target_rel_ci = 0.01;
  double timeout_seconds = 10;  // watchdog per candidate in the worker
  int warmup = 2;
  int min_repeats = 5;
  double max_measure_seconds = 2.0;  // wall-clock cap on one candidate's timed runs
  double early_stop_factor = 3.0;    // stop a candidate this much slower than the best so far
  bool prefer_cupti = true;
  bool check = true;      // compare outputs with the reference
  uint64_t seed = 0;      // input values
  std::string cache_dir;  // NVRTC cubin cache; empty: memory only
  // argv of the worker; empty: {"/proc/self/exe", "__worker"} (the cutune binary).
  std::vector<std::string> worker_command;
};

// The TimingOptions the worker gets for these options.
TimingOptions timing_options(const GpuMeasureOptions& options);

// One configuration made concrete: compile `source`, launch it with source.launch, and pass
// kernel parameter i the task argument args[i] (or, where maps[i] is set, a TMA tensor map
// over it, which the worker encodes).
struct KernelInstance {
  CudaSource source;
  std::vector<int> args;
  std::vector<std::optional<ir::TensorMapDesc>> maps;  // empty: no parameter is a map
};

// An instance, or why the configuration cannot run (recorded as invalid).
struct InstanceOrWhy {
  std::optional<KernelInstance> instance;
  std::string why;
};

// The device a task is measured on, and the limits its kernels are verified against (the
// device's, for options.arch where it is set).
struct MeasuringTarget {
  DeviceInfo device;
  ir::TargetLimits limits;
};

// The worker's task and its blob (worker_protocol.h).
struct WorkerSetup {
  WorkerTask task;
  std::vector<char> blob;
};

class KernelTask {
 public:
  virtual ~KernelTask() = default;
  // The worker's task. `builder` compiles a reference kernel where the task has one; without
  // `with_baseline` the task declares no library baseline (the measurer's retry when the
  // worker cannot set one up). Throws a one-line error when the task cannot be built.
  virtual WorkerSetup worker_setup(const GpuMeasureOptions& options, NvrtcBuilder& builder,
                                   const MeasuringTarget& target, bool with_baseline) const = 0;
  // One configuration's kernel instance, or why it cannot run. Thread-safe (the measurer
  // lowers ahead on a thread of its own).
  virtual InstanceOrWhy instance(const Config& config, const MeasuringTarget& target) const = 0;
};

}  // namespace cutune
