#pragma once
// Runs one configuration of a template in the CPU emulator and compares its output with the
// template's CPU reference. Inputs are uniform in [-1, 1] from a fixed seed; outputs start as
// NaN so that an element the kernel never writes fails the comparison.
//
// Tensors of a 16-bit type (fp16, bf16) are drawn as floats, rounded to the type (nearest
// even) and passed as raw 16-bit buffers; the reference computes on the rounded values, and
// 16-bit outputs are widened exactly before the comparison. An output with zero_init starts
// at zero instead of NaN.
//
// The error of an element is |out - ref| / max(|ref|, rms(ref)): relative where the reference
// is of typical size, and relative to the typical size near zero, so that cancellation in a
// long reduction does not turn rounding noise into a huge "relative" error.

#include <string>

#include "kernels/template.h"
#include "src/emulator/emulator.h"

namespace cutune {

struct EmulatedCheck {
  bool passed = false;
  double max_rel_error = 0;  // infinity if any output is NaN/Inf or the run failed
  std::string status;        // "ok", "rejected", or the emulator's status
  std::string message;       // one line; empty when passed
  double compile_seconds = 0;
  double run_seconds = 0;
};

constexpr double kDefaultTolerance = 1e-4;

// `value` rounded to nearest even in a storage type (Float16, BFloat16; others unchanged).
float round_to_storage(float value, ir::DType storage);

EmulatedCheck check_in_emulator(const Template& tmpl, const Config& config,
                                const ir::TargetLimits& limits, emu::Emulator& emulator,
                                double tolerance = kDefaultTolerance, uint64_t seed = 1);

// The same check for an already generated source (used by tests that plant bugs).
EmulatedCheck check_source_in_emulator(const Template& tmpl, const CudaSource& source,
                                       emu::Emulator& emulator,
                                       double tolerance = kDefaultTolerance, uint64_t seed = 1);

}  // namespace cutune
