#pragma once
// The text force-included before every emulated kernel: device_abi.h followed by
// device_prelude.h, embedded at build time so the library needs no files at run time.

#include <string_view>

namespace cutune::emu {

std::string_view device_prelude_text();

}  // namespace cutune::emu
