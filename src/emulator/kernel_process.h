#pragma once
// One launch of a loaded kernel, run in a forked child process so that whatever the kernel
// does (faults, loops forever, diverges at a barrier) the caller only gets a status back.
//
// The child installs fault handlers on an alternate signal stack, makes the const buffers
// read-only, and runs the grid's blocks on `host_threads` threads that take blocks from a
// shared counter, each block through a BlockRunner (with a plain object besides the
// instrumented one: the sampled blocks first, then, once all of them are done, the others). A fault
// inside a guarded buffer becomes out_of_bounds (kernel, buffer, element index, block and thread);
// any other fatal signal becomes crashed; a barrier divergence reported by a BlockRunner ends the
// child at once. The child is killed when the thread that forked it dies (PR_SET_PDEATHSIG), so a
// run never outlives its process. The parent waits up to `timeout_seconds`, then kills the child.
// After a clean exit it checks the buffers' canaries, which catch writes just past the end that did
// not fault.

#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/emulator/emulator.h"
#include "src/emulator/guarded_buffers.h"
#include "src/emulator/kernel_object.h"
#include "src/emulator/sanitizer.h"

namespace cutune::emu {

struct KernelLaunch {
  std::string kernel_name;
  LaunchSpec launch;
  const LoadedKernel* kernel = nullptr;
  const GuardedBuffers* buffers = nullptr;
  std::vector<void*> args;  // device_abi.h's ThreadMain convention
  int host_threads = 1;
  double timeout_seconds = 60;
  bool poison_shared = true;
  bool sanitize = false;  // the kernel is instrumented; `sanitizer` says what to check
  SanitizerRun sanitizer;
  // With `sanitize`, when set: only `checked_blocks` (linear indices, ascending) run from the
  // instrumented `kernel`, all of them first; then the others from this uninstrumented object
  // of the same kernel (sanitizer.h, sampled blocks).
  const LoadedKernel* plain_kernel = nullptr;
  std::vector<uint64_t> checked_blocks;
};

// Fills status, message and run_seconds.
EmuResult run_in_child_process(const KernelLaunch& launch);

}  // namespace cutune::emu
