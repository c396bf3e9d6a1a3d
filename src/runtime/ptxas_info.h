#pragma once
// The resource usage ptxas reports for one kernel when asked to be verbose
// (NVRTC option "--ptxas-options=-v"). Register pressure and spills are the first things a
// tuner checks about a candidate, and cheap features for the cost model.

#include <string_view>

namespace cutune {

// All sizes in bytes. Fields stay at their defaults when the report lacks them;
// `parsed` is true only when the kernel's "Used N registers" line was found.
struct PtxasInfo {
  int registers = -1;  // 32-bit registers per thread
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int shared_bytes = 0;       // static __shared__ ("smem"); dynamic shared is not known here
  int stack_frame_bytes = 0;  // the kernel's own local-memory frame
  int constant_bytes = 0;     // sum of the "cmem[N]" banks, where ptxas reports them
  int barriers = 0;           // named barriers used
  bool parsed = false;

  bool spills() const { return spill_store_bytes > 0 || spill_load_bytes > 0; }
  friend bool operator==(const PtxasInfo&, const PtxasInfo&) = default;
};

// Reads the report of entry function `kernel_name` out of an NVRTC log; an empty name takes
// the first entry function reported. Lines about other functions (non-inlined device
// functions, other kernels) are ignored. Never throws: an unrecognised log gives parsed=false.
PtxasInfo parse_ptxas_info(std::string_view log, std::string_view kernel_name = {});

}  // namespace cutune
