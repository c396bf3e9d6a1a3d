#pragma once
// A user kernel's task for the GPU measurer (src/measure/kernel_task.h): each configuration of
// a SpecTask is checked against the spec's conditions and the device's limits and becomes the
// user's unchanged source behind the parameters' defines (a template kernel through an NVRTC
// name expression), measured by the same measurer and worker as the templates' kernels as a
// user kernel's task (WorkerTask::user): the spec's arguments filled once here, scalars by
// value, constant memory uploaded by symbol, outputs compared with the reference and timed
// like the built-in kernels. The reference is the reference configuration's (or reference
// kernel's) output, computed once per worker on the GPU, or the spec's expected-output file.
//
// Argument sizes must not depend on the tuning parameters (they are allocated once per task,
// as Kernel Tuner does); a configuration whose sizes differ from the reference's is invalid.

#include <memory>
#include <string>
#include <vector>

#include "src/measure/kernel_task.h"
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

// The kernel instance of `instance` (a configuration made concrete), or why it cannot run: a
// launch `device` cannot run, argument sizes or fill values that differ from the reference's.
InstanceOrWhy spec_kernel_instance(const SpecTask& task, const SpecInstance& reference,
                                   const SpecInstance& instance, const DeviceInfo& device);

// The TaskKey a spec's records are written under: op "spec", the problem size as shape,
// the benchmark's (else the kernel's) name as template.
TaskKey spec_task_key(const SpecTask& task, const std::string& arch, const std::string& device);

// The kernel task of `task`, which must outlive it. SpecError when the kernel file is missing
// or the reference configuration cannot be instantiated. make_gpu_measurer measures it; it
// throws WorkerError when the worker cannot set the task up (the reference kernel fails).
std::unique_ptr<KernelTask> spec_kernel_task(const SpecTask& task);

}  // namespace cutune::spec
