#pragma once
// What compiling one CudaSource produced. A kernel that does not compile is a result with
// status compile_error and NVRTC's log, never an exception: one bad candidate must not end
// a tuning run.

#include <string>
#include <vector>

#include "src/runtime/ptxas_info.h"

namespace cutune {

enum class CompileStatus { ok, compile_error };

// A loadable device image and what it is for: the value handed to the measuring side.
struct Cubin {
  std::vector<char> image;  // an ELF cubin for `arch`
  std::string kernel_name;  // the extern "C" entry to look up after loading
  std::string arch;         // "sm_90"
};

struct CompileResult {
  CompileStatus status = CompileStatus::compile_error;
  std::string log;          // NVRTC's log: diagnostics and the ptxas report
  std::vector<char> cubin;  // non-empty exactly when status == ok
  PtxasInfo ptxas;          // of kernel_name; parsed == false on compile_error
  double seconds = 0;       // wall time of the NVRTC compile that made this result; a cache
                            // hit keeps that of the original compile
  bool from_cache = false;
  std::string kernel_name;  // the symbol to look up: a name expression's lowered name
  std::string arch;

  bool ok() const { return status == CompileStatus::ok; }
  Cubin to_cubin() const { return Cubin{cubin, kernel_name, arch}; }
};

}  // namespace cutune
