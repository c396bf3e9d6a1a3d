#pragma once
// Runs the exact CUDA C that cutune generates on the CPU, for correctness checks where no GPU
// exists.
//
// The source is compiled, unchanged, by the host C++ compiler into a shared object, with the
// device prelude (device_prelude.h) force-included before it and a generated postlude
// (postlude.h) after it. Compiled objects are cached in the work directory by a hash of
// everything that goes into them, so a configuration run twice compiles once.
//
// Each run happens in a forked child process (kernel_process.h): blocks are spread over
// `host_threads` host threads, the threads of a block run as fibers that switch at
// __syncthreads and at warp-collective intrinsics such as mma and ldmatrix (block_runner.h), and
// every global buffer sits between inaccessible guard pages (guarded_buffers.h). Unless turned off,
// the sanitizer checks every memory access (sanitizer.h): races, out-of-bounds shared and global
// accesses, uninitialised shared reads (those whose values reach an output, a branch or an
// address, or all of them with strict_uninitialised). A kernel that goes out of bounds, races,
// diverges at a barrier, crashes or runs too long therefore comes back as a status with a
// message; it never ends the caller.

#include <filesystem>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/emulator/host_buffer.h"

namespace cutune::emu {

enum class EmuStatus {
  ok,
  compile_error,       // message: the compiler's log
  out_of_bounds,       // message: kernel, buffer (parameter) name, element index
  barrier_divergence,  // message: kernel, block, the threads that disagree
  crashed,             // message: kernel, signal, block and thread when known
  timeout,             // the run took longer than EmulatorOptions::timeout_seconds
  // The sanitizer's findings (EmulatorOptions::racecheck, memcheck; see sanitizer.h):
  race,                  // message: kernel, buffer and element, both threads (or blocks) and lines
  shared_out_of_bounds,  // message: kernel, shared array and element index, thread, line
  uninitialized_read,    // message: kernel, shared array and element, thread, line
};

std::string to_string(EmuStatus status);

struct EmuResult {
  EmuStatus status = EmuStatus::ok;
  std::string message;         // empty when ok
  double compile_seconds = 0;  // 0 (well, the hashing) when the object came from the cache
  bool compile_cached = false;
  double run_seconds = 0;  // fork to exit of the child, buffers' copies excluded
  // When ok, under the tracked rule (EmulatorOptions::strict_uninitialised false): the reads
  // of shared memory no thread of the block had written whose values, as far as the sanitizer
  // can tell, reached no output, branch or address (sanitizer.h). A note, not a failure.
  uint64_t uninitialised_reads = 0;
};

struct EmulatorOptions {
  int host_threads = 0;                // threads running blocks; 0: one per hardware thread
  double timeout_seconds = 60;         // per run, compile excluded
  std::filesystem::path work_dir;      // sources, logs and cached objects; empty: a fresh temp dir
  std::vector<std::string> cxx_flags;  // appended to the compile command
  bool poison_shared = true;           // fill shared memory with 0xFF (NaN) bytes before each block
  // The sanitizer (sanitizer.h): the kernel is compiled with every memory access instrumented
  // when either is on. racecheck: data races on shared memory within a block (and between
  // blocks on global memory). memcheck: shared accesses outside their array, global accesses
  // before a buffer's start (or anywhere outside it), reads of shared memory never written.
  // Off, a kernel runs uninstrumented (faster), caught only by guard pages and canaries.
  bool racecheck = true;
  bool memcheck = true;
  // memcheck's rule for a read of shared memory no thread of the block wrote: false (tracked)
  // fails only when the value read reaches an output, a branch or an address, and counts the
  // others in EmuResult::uninitialised_reads; true (strict) fails on every such read.
  bool strict_uninitialised = false;
  // With the sanitizer on: false runs only a sample of the blocks instrumented (the corners of
  // the grid, their neighbours, the middle block: sanitizer.h) and the rest from a plain object,
  // which keeps a check's cost near the plain emulator's (where the sample is more than half
  // the grid, every block is instrumented all the same); true instruments every block.
  bool sanitize_all_blocks = false;
  // A persistent kernel's grid (src/codegen/launch_grid.h) is sized for the SMs of this
  // architecture's target_limits (src/target/device_info.h), as the GPU sizes it for its own;
  // persistent_grid > 0 forces that many blocks instead (at most the kernel's extent), so that
  // tests can give each block several tiles and an uneven last wave.
  std::string arch = "sm_90";
  int persistent_grid = 0;
};

class Emulator {
 public:
  // The compiler is `c++` on PATH, or the command in the environment variable CUTUNE_CXX.
  explicit Emulator(EmulatorOptions options = {});
  ~Emulator();  // removes the work dir when it made it
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  // Launches `src` once. `buffers` holds one buffer per pointer parameter, in parameter order,
  // each of exactly params[i].elements elements of params[i].type; `scalars` one value per
  // scalar parameter, in parameter order. On ok, the non-const buffers hold the kernel's
  // output; otherwise they are left as they were. Safe to call from several threads.
  EmuResult run(const CudaSource& src, std::vector<HostBuffer>& buffers,
                const std::vector<ScalarArg>& scalars = {});

  const std::filesystem::path& work_dir() const { return work_dir_; }

 private:
  EmulatorOptions options_;
  std::filesystem::path work_dir_;
  bool owns_work_dir_ = false;
};

}  // namespace cutune::emu
