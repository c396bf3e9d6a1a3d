#pragma once
// Correctness of a user kernel's configurations on the CPU: each candidate runs in the emulator
// with the spec's inputs and its outputs are compared (src/measure/correctness.h) with the
// reference: the reference configuration's outputs, a reference kernel's, or a file's. The
// emulator's sanitizer (its options; `cutune verify`'s are verify_emulator_options in
// src/measure/emulated_verify.h) checks the candidates and the reference as it checks
// templates: a race, a shared access out of bounds or an uninitialised shared read is the
// check's status, with one line of what and where.
//
// What the emulator cannot compile although NVRTC can (a CUDA header or intrinsic the prelude
// lacks) is reported as status "not_emulated" with "not emulated: <what>", never a crash; a
// kernel NVRTC rejects too is "compile_error" with NVRTC's log.

#include <optional>
#include <string>
#include <vector>

#include "src/emulator/emulator.h"
#include "src/measure/emulated_check.h"
#include "src/runtime/device.h"
#include "src/spec/spec_buffers.h"
#include "src/spec/spec_task.h"

namespace cutune::spec {

// A configuration's check, of the same kind as a template's (emulated_check.h), so that one
// emulated verify (emulated_verify.h) reports both. status: "ok", "rejected" (conditions or
// device limits), "not_emulated", "compile_error", "mismatch", "reference_failed", or an
// emulator status, the sanitizer's included ("race", "shared_out_of_bounds",
// "uninitialized_read", "out_of_bounds", "crashed", ...); message: one line, empty when passed.
using SpecCheck = EmulatedCheck;

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
  // When the reference ran in the emulator and failed there (a finding in the kernel, such as
  // a race, not in the spec): that run's check; nullopt otherwise.
  const std::optional<SpecCheck>& reference_check() const { return reference_check_; }

 private:
  struct Run {
    SpecCheck check;
    std::vector<ArgData> outputs;
  };
  // `kernel_name`: the user's kernel that `source` calls, named in the emulator's messages.
  Run run_instance(const SpecInstance& instance, const CudaSource& source,
                   const std::string& kernel_name);

  const SpecTask& task_;
  emu::Emulator& emulator_;
  DeviceInfo device_;
  uint64_t seed_;
  bool reference_done_ = false;
  std::optional<std::vector<ArgData>> reference_;
  std::string reference_error_;
  std::optional<SpecCheck> reference_check_;
};

}  // namespace cutune::spec
