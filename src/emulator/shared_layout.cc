#include "src/emulator/shared_layout.h"

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "src/emulator/postlude.h"

namespace cutune::emu {

namespace {

namespace fs = std::filesystem;

// Strips a demangled local name ("gemm_nn::A_shared") to the variable's own.
std::string variable_name(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  if (size_t colons = name.rfind("::"); colons != std::string::npos) name = name.substr(colons + 2);
  if (name.rfind(kSharedStoragePrefix, 0) == 0)
    name = name.substr(std::strlen(kSharedStoragePrefix));
  return name;
}

}  // namespace

SharedLayout read_shared_layout(const fs::path& object,
                                const cutune_emu_abi::SharedArrayInfo* table) {
  SharedLayout layout;
  std::ifstream f(object, std::ios::binary);
  std::string image((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (image.size() < sizeof(Elf64_Ehdr)) return layout;
  const char* base = image.data();
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) {
    return layout;
  }
  auto in_image = [&](uint64_t offset, uint64_t bytes) {
    return offset <= image.size() && bytes <= image.size() - offset;
  };
  if (!in_image(eh->e_phoff, uint64_t{eh->e_phnum} * sizeof(Elf64_Phdr)) ||
      !in_image(eh->e_shoff, uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr))) {
    return layout;
  }
  const auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type == PT_TLS) layout.tls_bytes = ph[i].p_memsz;
  }
  std::map<std::string, const cutune_emu_abi::SharedArrayInfo*> declared;
  for (const auto* t = table; t != nullptr && t->name != nullptr; ++t) declared[t->name] = t;

  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr& strtab = sh[sh[i].sh_link];
    if (!in_image(sh[i].sh_offset, sh[i].sh_size) || !in_image(strtab.sh_offset, strtab.sh_size)) {
      continue;
    }
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
    size_t count = sh[i].sh_size / sizeof(Elf64_Sym);
    for (size_t s = 0; s < count; ++s) {
      if (ELF64_ST_TYPE(syms[s].st_info) != STT_TLS || syms[s].st_name >= strtab.sh_size) continue;
      std::string name = variable_name(base + strtab.sh_offset + syms[s].st_name);
      if (name.rfind("cutune_emu_redzone", 0) == 0) continue;
      auto it = declared.find(name);
      if (it == declared.end()) {
        layout.ignored.emplace_back(syms[s].st_value, syms[s].st_size);
        continue;
      }
      SharedLayout::Array a;
      a.name = name;
      a.offset = syms[s].st_value;
      a.bytes = it->second->bytes != 0 ? it->second->bytes : syms[s].st_size;
      a.dynamic = it->second->bytes != 0;
      a.element_bytes = std::max(1u, it->second->element_bytes);
      layout.arrays.push_back(std::move(a));
    }
    layout.known = true;
  }
  return layout;
}

}  // namespace cutune::emu
