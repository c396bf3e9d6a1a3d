#pragma once
// Measuring a user kernel's configurations on the GPU: each configuration of a SpecTask is
// checked against the spec's conditions and the device's limits, compiled by NVRTC (the
// user's unchanged source behind the parameters' defines; a template through an NVRTC name
// expression), and run by the measuring worker process (src/measure/worker_pool.h) as a user
// kernel's task (WorkerTask::user): the spec's arguments filled once here, scalars by value,
// constant memory uploaded by symbol, outputs compared with the reference and timed like the
// built-in kernels. The reference is the reference configuration's (or reference kernel's)
// output, computed once per worker on the GPU, or the spec's expected-output file.
//
// Argument sizes must not depend on the tuning parameters (they are allocated once per task,
// as Kernel Tuner does); a configuration whose sizes differ from the reference's is invalid.

#include <memory>
#include <string>
#include <vector>

#include "src/measure/gpu_measurer.h"
#include "src/measure/measurer.h"
#include "src/measure/worker_protocol.h"
#include "src/runtime/device.h"
#include "src/records/record.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/spec/spec_task.h"

namespace cutune::spec {

// The worker's task for `task` and its blob (the arguments' bytes, expected outputs, the
// reference cubin), built without a GPU: `builder` compiles the reference. SpecError (one line)
// when the reference cannot launch on `device` or does not compile.
struct SpecWorkerTask {
  WorkerTask task;
  std::vector<char> blob;
  SpecInstance reference;  // the reference configuration made concrete
};
SpecWorkerTask spec_worker_task(const SpecTask& task, const GpuMeasureOptions& options,
                                NvrtcBuilder& builder, const DeviceInfo& device);

// The request of one configuration, or its result when it cannot run (a condition, a device
// limit, argument sizes that differ from the task's, a compile error with NVRTC's first line,
// too many registers). `compiled` is that configuration's NVRTC result.
struct SpecCandidate {
  bool runnable = false;
  MeasureRequest request;  // runnable
  MeasureResult result;    // not runnable; compile time and ptxas extras either way
};
SpecCandidate spec_candidate(const SpecTask& task, const SpecInstance& reference,
                             const SpecInstance& instance, const CompileResult& compiled,
                             const DeviceInfo& device, bool check);

// The TaskKey a spec's records are written under: op "spec", the problem size as shape,
// the benchmark's (else the kernel's) name as template.
TaskKey spec_task_key(const SpecTask& task, const std::string& arch, const std::string& device);

// Throws NoDeviceError ("no CUDA device found: ...") where there is no usable GPU, WorkerError
// when the worker cannot set the task up (the reference kernel fails on the GPU).
std::unique_ptr<Measurer> make_spec_measurer(const SpecTask& task,
                                             const GpuMeasureOptions& options);

}  // namespace cutune::spec
