#pragma once
// The kernel source lines of the code offsets in a sanitizer finding (sanitizer.h writes a
// location it only knows as an offset into the object's code as "@pc:HEX@").

#include <filesystem>
#include <string>

namespace cutune::emu {

// Replaces each "@pc:HEX@" in `message` with the kernel source line of that code offset in
// `object` (through addr2line), or with "an unknown line" when it cannot be found.
std::string resolve_source_lines(const std::string& message, const std::filesystem::path& object);

}  // namespace cutune::emu
