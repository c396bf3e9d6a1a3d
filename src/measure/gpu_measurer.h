#pragma once
// The GPU measurer, one for templates and user kernels: makes each configuration's kernel
// instance (kernel_task.h: a template's lowering or a spec's source), compiles it with NVRTC
// (on compile_jobs threads, ahead of the candidate being measured, and the next batch during
// this one), rejects what cannot launch, and runs the rest in a worker process on the GPU
// (src/measure/worker_process.h), which checks the output against a reference computed once
// per task and times the kernel. Every failure is a result with its status; a worker that
// crashes or hangs is replaced and the batch goes on.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/template.h"
#include "src/measure/kernel_task.h"
#include "src/measure/template_task.h"
#include "src/runtime/compile_result.h"
#include "src/runtime/device.h"
#include "src/measure/worker_protocol.h"
#include "src/measure/measurer.h"

namespace cutune {

// The request of one compiled kernel instance, or its result when it cannot run (a compile
// error with NVRTC's first line, more registers or shared memory than a block of `device` may
// have). The result carries the compile time and ptxas extras either way.
struct Candidate {
  bool runnable = false;
  MeasureRequest request;  // runnable
  MeasureResult result;
};
Candidate compiled_candidate(const KernelInstance& instance, const CompileResult& compiled,
                             const DeviceInfo& device, bool check);

// Measures `requests` in turn, `rounds` times (A B A B ... for a baseline and a tuned kernel),
// each round through `send` (a worker: same harness, timer, L2 flush and clocks for all), so
// that drift touches each alike. One result per request, in order: every round's times
// together (details of the last round, plus details.rounds: how many rounds the times come
// from and each round's median); a request that fails in a round keeps that failure and is not sent
// again. Request ids are left as given. rounds < 1 is taken as 1.
std::vector<MeasureResult> measure_interleaved(
    const std::function<MeasureReply(const MeasureRequest&)>& send,
    const std::vector<MeasureRequest>& requests, int rounds);

// The GPU that describes the measuring devices of `options` (they are of one kind, chosen by
// src/measure/device_selection.h). Throws NoDeviceError ("no CUDA device found") where there is
// no usable GPU.
DeviceInfo measuring_device(const GpuMeasureOptions& options);

// The device and verifier limits the measurer of `options` works for on `device`.
MeasuringTarget measuring_target(DeviceInfo device, const GpuMeasureOptions& options);

// The one GPU measurer, for a template's or a spec's task. Throws NoDeviceError as
// measuring_device does, WorkerError when no worker can set the task up (with the baseline
// and, when that fails, without it), and the task's own one-line error when it cannot be
// built (a spec's reference that does not compile).
std::unique_ptr<Measurer> make_gpu_measurer(std::unique_ptr<KernelTask> task,
                                            const GpuMeasureOptions& options);
// The same on a device the caller describes (no driver query): with a fake worker command
// (tests/measure's `--fake` worker) and target_limits(arch), the measurer's own threads
// (lowering, NVRTC, prefetch) run on a machine without a GPU.
std::unique_ptr<Measurer> make_gpu_measurer(std::unique_ptr<KernelTask> task,
                                            const GpuMeasureOptions& options, DeviceInfo device);
// A template's task (template_task.h); `tmpl` must outlive the measurer.
std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl, const GpuMeasureOptions& options);
std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl, const GpuMeasureOptions& options,
                                            DeviceInfo device);

}  // namespace cutune
