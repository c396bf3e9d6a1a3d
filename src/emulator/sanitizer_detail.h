#pragma once
// What the sanitizer's two halves share: sanitizer.cc (the run, the global buffers and the
// races between blocks) and sanitizer_shared.cc (each block's shared memory and the hook).
// Only those two files include this.

#include <cstdint>
#include <string>

#include "src/emulator/device_abi.h"
#include "src/emulator/sanitizer.h"

namespace cutune::emu::sanitizer_detail {

// A location as a finding records it: a kernel source line with this bit set, else the
// object's code offset (written "@pc:HEX@" for resolve_source_lines).
constexpr uint32_t kLineBit = 0x80000000u;

// The run, set by begin_sanitized_run before any block runs.
extern SanitizerRun g_run;
// Every global buffer's mapping lies in [g_lo, g_lo + g_span).
extern uintptr_t g_lo, g_span;

std::string where_text(uint32_t where);
// Ends the run with a finding (through g_run.report); while a block runs again under the
// tracked rule, the words that say so follow the kernel's name.
[[noreturn]] void report_finding(EmuStatus status, const std::string& message);
extern thread_local std::string t_rerun_context;
std::string dim_text(const cutune_emu_abi::Dim3& d);

}  // namespace cutune::emu::sanitizer_detail
