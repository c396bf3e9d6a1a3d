#pragma once
// The GPU measurer: lowers each configuration of a template, compiles it with NVRTC (on
// compile_jobs threads, ahead of the candidate being measured), rejects what cannot launch,
// and runs the rest in a worker process on the GPU (src/measure/worker_process.h), which checks
// the output against a reference computed once per task and times the kernel. Every failure is
// a result with its status; a worker that crashes or hangs is replaced and the batch goes on.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/template.h"
#include "src/runtime/device.h"
#include "src/measure/worker_protocol.h"
#include "src/measure/measurer.h"

namespace cutune {

struct GpuMeasureOptions {
  std::string arch;  // empty: the device's
  int device = 0;
  // GPUs to measure on, one worker each (src/measure/worker_pool.h); empty: {device}. Each
  // result's extra says which one measured it ("device": ordinal).
  std::vector<int> devices;
  int compile_jobs = 2;
  bool flush_l2 = true;              // --no-flush turns it off
  double min_repeat_seconds = 0.01;  // kernel time summed before a stable median may stop
  int max_repeats = 200;
  double target_rel_ci = 0.01;
  double timeout_seconds = 10;  // watchdog per candidate in the worker
  // Added for the GPU runtime:
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

// Fills request.args with the index in `tensors` of each of `source`'s parameters, and
// request.maps (indexed like args; empty when there is none) with the description of each
// tensor-map parameter, which the worker encodes over the tensor it names. Returns why a
// parameter is neither a tensor nor a map over one ("" when all are).
std::string bind_kernel_arguments(const CudaSource& source, const std::vector<TensorSpec>& tensors,
                                  MeasureRequest& request);

// The TimingOptions the worker gets for these options.
TimingOptions timing_options(const GpuMeasureOptions& options);

// What the worker gets for `tmpl`: tensors by storage type, seed, the template's declared
// baseline (when `allow_baseline`), and the reference: the baseline's own for a GEMM (cuBLAS
// on the GPU), else the template's CPU reference on the same rounded inputs, whose outputs
// fill `expected`.
WorkerTask worker_task(const Template& tmpl, const GpuMeasureOptions& options,
                       std::vector<char>* expected, bool allow_baseline = true);

// Measures `requests` in turn, `rounds` times (A B A B ... for a baseline and a tuned kernel),
// each round through `send` (a worker: same harness, timer, L2 flush and clocks for all), so
// that drift touches each alike. One result per request, in order: every round's times
// together (extra of the last round, plus "rounds": how many rounds the times come from and
// "round_medians_s"); a request that fails in a round keeps that failure and is not sent again.
// Request ids are left as given. rounds < 1 is taken as 1.
std::vector<MeasureResult> measure_interleaved(
    const std::function<MeasureReply(const MeasureRequest&)>& send,
    const std::vector<MeasureRequest>& requests, int rounds);

// The GPU that describes the measuring devices of `options` (they are of one kind, chosen by
// src/measure/device_selection.h). Throws NoDeviceError ("no CUDA device found") where there is
// no usable GPU.
DeviceInfo measuring_device(const GpuMeasureOptions& options);

// Throws NoDeviceError as measuring_device does.
std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl, const GpuMeasureOptions& options);
// The same on a device the caller describes (no driver query): with a fake worker command
// (tests/measure's `--fake` worker) and target_limits(arch), the measurer's own threads
// (lowering, NVRTC, prefetch) run on a machine without a GPU.
std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl, const GpuMeasureOptions& options,
                                            DeviceInfo device);

}  // namespace cutune
