#pragma once
// A kernel compiled by the host compiler into a shared object (prelude + kernel + postlude),
// cached on disk, and that object loaded into this process.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/emulator/device_abi.h"

namespace cutune::emu {

struct CompiledObject {
  bool ok = false;
  std::filesystem::path path;  // the shared object, when ok
  std::string log;             // the compiler's output (the reason, when not ok)
  double seconds = 0;
  bool cached = false;  // found in the work dir; nothing was compiled
};

// The compiler command: CUTUNE_CXX split at spaces if set, else `c++`.
std::vector<std::string> host_compiler_command();

// Compiles `src` in `work_dir`, or finds the object a previous identical compile left there
// (same source, prelude, postlude, compiler and flags). Several threads or processes may
// share a work dir: files appear by atomic rename. A kernel that does not compile is a result
// with ok == false, never an exception.
// With `sanitize`, the object is instrumented for the sanitizer (sanitizer.h): every memory
// access calls the access hook, the shared arrays have red zones, and it has line tables.
CompiledObject compile_kernel_object(const CudaSource& src, const std::filesystem::path& work_dir,
                                     const std::vector<std::string>& extra_flags,
                                     bool sanitize = false);

// A loaded kernel object and its entry points; unloaded on destruction.
class LoadedKernel {
 public:
  // Throws std::runtime_error when the object cannot be loaded (a broken install, not a
  // broken kernel: the object just compiled).
  explicit LoadedKernel(const std::filesystem::path& object);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  cutune_emu_abi::ThreadMain thread_main() const { return thread_main_; }
  cutune_emu_abi::TlsTouch tls_touch() const { return tls_touch_; }

  // Instrumented objects only (null otherwise): the hook the accesses call, set before a run.
  cutune_emu_abi::AccessHook* access_hook() const { return access_hook_; }
  const cutune_emu_abi::SharedArrayInfo* shared_arrays() const { return shared_arrays_; }
  // The address the object is loaded at (its ELF addresses are relative to it).
  uintptr_t load_address() const { return load_address_; }

 private:
  cutune_emu_abi::AccessHook* access_hook_ = nullptr;
  const cutune_emu_abi::SharedArrayInfo* shared_arrays_ = nullptr;
  uintptr_t load_address_ = 0;
  void* handle_ = nullptr;
  cutune_emu_abi::ThreadMain thread_main_ = nullptr;
  cutune_emu_abi::TlsTouch tls_touch_ = nullptr;
};

}  // namespace cutune::emu
