#pragma once
// Runs the CUDA threads of a block as fibers on the calling host thread, one block at a time.
//
// Each thread is a fiber (Boost.Context) on its own stack of kStackBytes, with a guard page
// below it. The runner resumes every live fiber in turn until it reaches a __syncthreads or
// returns; when every live thread waits at the same barrier it releases them all, and the
// block is done when all have returned. Anything else, threads that exit while others wait or
// threads waiting at different __syncthreads, is a barrier divergence: on a GPU the block
// would hang or behave undefinedly.

#include <boost/context/fiber.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/emulator/device_abi.h"

namespace cutune::emu {

class BlockRunner {
 public:
  static constexpr size_t kStackBytes = 256 * 1024;

  // `tls_touch`, when given, is used to find the kernel object's thread-local block (its
  // shared memory), which is then filled with 0xFF bytes before each block so that reads of
  // shared memory no thread wrote show up as NaN (or -1).
  BlockRunner(const LaunchSpec& launch, cutune_emu_abi::ThreadMain entry, void* const* args,
              cutune_emu_abi::TlsTouch tls_touch);
  ~BlockRunner();
  BlockRunner(const BlockRunner&) = delete;
  BlockRunner& operator=(const BlockRunner&) = delete;

  // Runs block `block_idx` to completion. Returns an empty string, or a description of a
  // barrier divergence; the block's fibers are then left suspended, and the caller must end
  // the process (the emulator's child) without destroying this runner.
  std::string run(cutune_emu_abi::Dim3 block_idx);

 private:
  enum class State { ready, at_barrier, done };
  struct Slot {
    cutune_emu_abi::Thread thread{};
    boost::context::fiber fiber;      // the CUDA thread, while it is suspended
    boost::context::fiber scheduler;  // the runner, while the CUDA thread runs
    State state = State::ready;
    int barrier_line = 0;
  };

  static void barrier(cutune_emu_abi::Thread* self, int line);
  std::string divergence(const Slot& a, const Slot& b) const;

  LaunchSpec launch_;
  cutune_emu_abi::ThreadMain entry_;
  void* const* args_;
  std::vector<Slot> slots_;
  std::byte* stacks_ = nullptr;
  size_t stacks_bytes_ = 0;
  std::byte* tls_block_ = nullptr;
  size_t tls_bytes_ = 0;
};

// The emulated thread that the calling host thread is running, or null between threads.
// Async-signal-safe, for fault reports.
const cutune_emu_abi::Thread* current_emulated_thread();

}  // namespace cutune::emu
