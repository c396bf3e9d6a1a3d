#pragma once
// Runs one configuration of a template in the CPU emulator and compares its output with the
// template's CPU reference, by the one correctness rule (correctness.h): inputs from
// input_values (rounded to each tensor's storage type; the reference computes on the rounded
// values), outputs starting as NaN (zero for zero_init outputs), 16-bit outputs widened
// exactly, and the tolerance of the output's storage type and the reduction length unless the
// caller names one.

#include <optional>
#include <string>

#include "kernels/template.h"
#include "src/emulator/emulator.h"

namespace cutune {

struct EmulatedCheck {
  bool passed = false;
  double max_rel_error = 0;  // infinity if any output is NaN/Inf or the run failed
  double tolerance = 0;      // the one applied (the largest, over the outputs)
  std::string status;        // "ok", "rejected", or the emulator's status
  std::string message;       // one line; empty when passed
  // The emulator's note (EmuResult::uninitialised_reads): uninitialised shared reads whose
  // values reached no output, branch or address.
  uint64_t uninitialised_reads = 0;
  double compile_seconds = 0;
  double run_seconds = 0;
};

// `value` rounded to nearest even in a storage type (Float16, BFloat16; others unchanged).
float round_to_storage(float value, ir::DType storage);

// `tolerance`: nullopt for the correctness rule's (error_tolerance of each output's type).
EmulatedCheck check_in_emulator(const Template& tmpl, const Config& config,
                                const ir::TargetLimits& limits, emu::Emulator& emulator,
                                std::optional<double> tolerance = std::nullopt, uint64_t seed = 1);

// The same check for an already generated source (used by tests that plant bugs). For a
// template of run-time M the source may come from the same template at another M: it runs
// at tmpl's M (launch_grid.h's at_m).
EmulatedCheck check_source_in_emulator(const Template& tmpl, const CudaSource& source,
                                       emu::Emulator& emulator,
                                       std::optional<double> tolerance = std::nullopt,
                                       uint64_t seed = 1);

}  // namespace cutune
