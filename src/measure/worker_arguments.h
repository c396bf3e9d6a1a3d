#pragma once
// The worker's side of a task's arguments (worker_protocol.h) on the GPU: the device buffers
// made by their fill rule, the host bytes they are reset from, the scalars' and __constant__
// values; a kernel loaded with each of its parameters bound to an argument; and how a failing
// driver call of a candidate becomes its result. Inside the worker process only.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/measure/worker_protocol.h"
#include "src/runtime/cuda_module.h"

namespace cutune {

// A candidate's failure, carried out of the measuring code to become its result.
struct CandidateFailure {
  MeasureStatus status;
  bool poisoned;
  std::string error;
};

// Runs `call`, turning a CudaError into a CandidateFailure prefixed by `what`: the driver's by
// classify_cuda_error (worker_gpu.h; `at_launch`: cuLaunchKernel itself returned it), any
// other library's as a runtime error that poisons the context.
void guarded(const std::function<void()>& call, bool at_launch, const char* what);

// A loaded kernel: its module and function, and the value of each parameter (an argument's
// address, a scalar's bytes, or a tensor map over a buffer), which `args` points at.
struct LoadedKernel {
  std::optional<Module> module;
  CUfunction function = nullptr;
  std::vector<std::array<char, 16>> values;
  std::vector<CUtensorMap> maps;  // reserved: args point into it
  std::vector<void*> args;
};

class DeviceArguments {
 public:
  DeviceArguments() = default;
  // Allocates every buffer and fills every argument by its rule; `take(n)` hands out the
  // blob's next n bytes (the ArgInit::blob arguments', in order). Needs a current context.
  DeviceArguments(const WorkerTask& task, const std::function<std::vector<char>(int64_t)>& take);

  size_t size() const { return arguments_.size(); }
  const WorkerArgument& operator[](size_t i) const { return arguments_[i]; }
  bool has_buffer(size_t i) const { return i < buffers_.size() && buffers_[i].has_value(); }
  CUdeviceptr pointer(size_t i) const { return buffers_[i]->get(); }
  DeviceBuffer& buffer(size_t i) { return *buffers_[i]; }

  // Argument `i` (a buffer) back to its initial bytes; every output; every argument reset
  // before each run.
  void reset(size_t i);
  void reset_outputs();
  void reset_each_run();

  // Buffer `i` read back and widened to floats from its element type.
  std::vector<float> download_values(size_t i) const;

  // Loads `cubin`'s `kernel` for `arch` (with `launch`'s dynamic shared memory), fills the
  // module's __constant__ arguments, and binds parameter p to argument arg_indices[p] (a tensor
  // map over it where maps[p] is set). Throws CandidateFailure.
  LoadedKernel load(const std::vector<char>& cubin, const std::string& kernel,
                    const std::string& arch, const LaunchSpec& launch,
                    const std::vector<int>& arg_indices,
                    const std::vector<std::optional<ir::TensorMapDesc>>& maps) const;

 private:
  std::vector<WorkerArgument> arguments_;
  std::vector<std::optional<DeviceBuffer>> buffers_;  // per argument: buffers only
  std::vector<std::vector<char>> initial_;  // per argument: bytes to reset from (blob, seeded)
};

}  // namespace cutune
