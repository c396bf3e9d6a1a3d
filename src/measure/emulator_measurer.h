#pragma once
// The emulator measurer (`cutune tune ... --device emulator`): each configuration is lowered,
// run once in the CPU emulator (src/emulator: the exact generated CUDA C, threads as fibers,
// guarded buffers, each run in a forked child) on the correctness rule's inputs, and checked
// against the template's CPU reference, so that the whole tuning path (search, records,
// resume, report, export) runs on a machine without a GPU.
//
// Its "time" is the emulator's wall time for the run, labelled as such: timer `emulator`,
// device "emulator", extra {"emulated": true, "time_is": "..."}. It says nothing about GPU
// speed, and `bench --log` refuses such records.
//
// Emulator outcomes map to statuses: a verifier rejection is `invalid`, a host compile failure
// `compile_error`, a crash / out-of-bounds access / race / barrier divergence `runtime_error`
// (the emulator's status and message in `error`), a run over the time limit `timeout`, an
// output off the reference `wrong_answer`.

#include <cstdint>
#include <filesystem>
#include <memory>

#include "kernels/template.h"
#include "src/ir/verify.h"
#include "src/measure/measurer.h"

namespace cutune {

inline constexpr const char* kEmulatorDevice = "emulator";

struct EmulatorMeasureOptions {
  ir::TargetLimits limits;  // what the sources are generated for (arch, block limits)
  int host_threads = 0;     // 0: one per hardware thread
  double timeout_seconds = 60;
  bool sanitize = false;           // the race / bounds / uninitialised-read checks (slower)
  uint64_t seed = 1;               // input values
  std::filesystem::path work_dir;  // compiled objects; empty: a fresh temp dir
};

// The template must outlive the measurer.
std::unique_ptr<Measurer> make_emulator_measurer(const Template& tmpl,
                                                 EmulatorMeasureOptions options);

}  // namespace cutune
