#pragma once
// Where an instrumented kernel object (compile_kernel_object with sanitize) keeps its shared
// arrays, read from its ELF symbol table for the sanitizer (sanitizer.h).

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "src/emulator/device_abi.h"

namespace cutune::emu {

// Where the shared arrays lie in an object's thread-local block (offsets from its start), read
// from the object's symbol table; the object's own thread-local variables are `ignored`.
struct SharedLayout {
  struct Array {
    std::string name;
    size_t offset = 0;
    size_t bytes = 0;
    unsigned element_bytes = 1;
    bool dynamic = false;  // the extern __shared__ array
  };
  std::vector<Array> arrays;
  std::vector<std::pair<size_t, size_t>> ignored;  // offset, bytes
  size_t tls_bytes = 0;
  bool known = false;  // false: the object has no symbol table; shared memory goes unchecked
};

SharedLayout read_shared_layout(const std::filesystem::path& object,
                                const cutune_emu_abi::SharedArrayInfo* table);

}  // namespace cutune::emu
