#pragma once
// What the machine code of one compiled kernel says about it: registers, spills, shared
// memory (from ptxas's report and the launch) and the instruction mix of its main loop (from
// the disassembly). The value `cutune sass` and `cutune compile --sass` print.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "src/codegen/cuda_source.h"
#include "src/runtime/compile_result.h"
#include "src/sass/instruction_mix.h"
#include "src/sass/main_loop.h"
#include "src/sass/sass_listing.h"

namespace cutune::sass {

struct SassReport {
  std::string kernel_name;
  int registers = -1;  // per thread; -1 when ptxas did not report
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int local_loads = 0;   // LDL instructions in the whole kernel
  int local_stores = 0;  // STL instructions in the whole kernel
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_bytes = 0;
  size_t instructions = 0;  // the whole kernel
  size_t loops = 0;         // backward branches
  std::optional<Loop> main_loop;
  uint32_t main_loop_begin = 0;  // addresses of its first instruction and of its latch
  uint32_t main_loop_end = 0;
  InstructionMix mix;  // of the main loop; empty without one

  bool spills() const { return spill_store_bytes > 0 || spill_load_bytes > 0 || local_stores > 0; }
  nlohmann::json to_json() const;
  // A few lines for people.
  std::string to_text() const;
};

// The report for `function` (parsed disassembly) with ptxas's numbers and the launch's
// shared memory.
SassReport make_report(const Function& function, const PtxasInfo& ptxas, const LaunchSpec& launch);

// Disassembles a compiled kernel and reports on its entry function. Throws
// MissingDisassemblerError (disassembler.h) without nvdisasm; std::runtime_error when the
// disassembly holds no function of that name.
SassReport inspect(const CompileResult& compiled, const LaunchSpec& launch);

}  // namespace cutune::sass
