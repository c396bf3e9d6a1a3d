#pragma once
// The layout shared by the emulator's host side and the device prelude that is compiled into
// every emulated kernel. Both sides compile this very text (the prelude embeds it), so the
// layouts cannot drift. It includes nothing and uses only what the prelude may use.

namespace cutune_emu_abi {

struct Dim3 {
  unsigned x, y, z;
};

// One emulated CUDA thread as device code sees it. The host owns it for the duration of a
// block; device code reaches it through the prelude's thread-local `cutune_emu_self`.
struct Thread {
  Dim3 thread_idx;
  Dim3 block_idx;
  Dim3 block_dim;
  Dim3 grid_dim;
  // Suspends the calling thread at the __syncthreads on `line` of the kernel source and
  // returns once every thread of the block has reached it.
  void (*barrier)(Thread* self, int line);
  void* host;  // the scheduler's record of this thread; opaque to device code
};

// Runs one CUDA thread of the kernel to completion. `args` holds, in parameter order, the
// device pointer itself for a pointer parameter and the address of the value for a scalar.
using ThreadMain = void (*)(Thread* self, void* const* args);
// Returns the address of a thread-local variable of the kernel object, which makes the
// calling host thread allocate the object's thread-local (that is, shared-memory) block.
using TlsTouch = void* (*)();

inline constexpr const char* kThreadMainSymbol = "cutune_emu_thread_main";
inline constexpr const char* kTlsTouchSymbol = "cutune_emu_tls_touch";

}  // namespace cutune_emu_abi
