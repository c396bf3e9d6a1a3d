#pragma once
// Correctness of a user kernel's configurations on the CPU: each candidate runs in the emulator
// with the spec's inputs and its outputs are compared (src/measure/correctness.h) with the
// reference: the reference configuration's outputs, a reference kernel's, or a file's.
//
// What the emulator cannot compile although NVRTC can (a CUDA header or intrinsic the prelude
// lacks) is reported as status "not_emulated" with "not emulated: <what>", never a crash; a
// kernel NVRTC rejects too is "compile_error" with NVRTC's log.

#include <optional>
#include <string>
#include <vector>

#include "src/emulator/emulator.h"
#include "src/runtime/device.h"
#include "src/spec/spec_buffers.h"
#include "src/spec/spec_task.h"

namespace cutune::spec {

struct SpecCheck {
  bool passed = false;
  // "ok", "rejected" (conditions or device limits), "not_emulated", "compile_error",
  // "mismatch", "reference_failed", or an emulator status ("out_of_bounds", "crashed", ...)
  std::string status;
  double max_rel_error = 0;  // over the outputs; infinity when not compared
  std::string message;       // one line; empty when passed
  double compile_seconds = 0;
  double run_seconds = 0;
};

// "not emulated: ..." from the host compiler's log of a kernel that NVRTC accepts: the first
// undeclared name, missing header or unknown type, with its line.
std::string not_emulated_reason(const std::string& compiler_log);

// The largest accepted error of an output of `type` (the spec's Tolerance if it has one):
// error_tolerance of the float type over a reduction of 4096, 0 for integers.
double output_tolerance(const KernelSpec& spec, ElemType type);

class SpecVerifier {
 public:
  SpecVerifier(const SpecTask& task, emu::Emulator& emulator, DeviceInfo device, uint64_t seed = 1);

  SpecCheck check(const Config& config);
  // The reference outputs (one per output argument, in order), computed on first use;
  // nullopt with `reference_error()` set when the reference itself fails.
  const std::optional<std::vector<ArgData>>& reference();
  const std::string& reference_error() const { return reference_error_; }

 private:
  struct Run {
    SpecCheck check;
    std::vector<ArgData> outputs;
  };
  Run run_instance(const SpecInstance& instance, const CudaSource& source);

  const SpecTask& task_;
  emu::Emulator& emulator_;
  DeviceInfo device_;
  uint64_t seed_;
  bool reference_done_ = false;
  std::optional<std::vector<ArgData>> reference_;
  std::string reference_error_;
};

}  // namespace cutune::spec
