#include "src/emulator/postlude.h"

#include <cctype>
#include <set>

#include <fmt/format.h>

#include "src/emulator/device_abi.h"

namespace cutune::emu {

namespace {

struct ExternShared {
  std::string type;
  std::string name;
};

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string without_align(std::string decl) {
  for (size_t at; (at = decl.find("__align__")) != std::string::npos;) {
    size_t close = decl.find(')', at);
    if (close == std::string::npos) break;
    decl.erase(at, close + 1 - at);
  }
  return decl;
}

// Finds `extern __shared__ [__align__(n)] TYPE NAME[];` declarations. CUDA gives all of them
// the same address (the start of dynamic shared memory), so one name is all we can honour.
std::vector<ExternShared> extern_shared_arrays(const std::string& code) {
  std::vector<ExternShared> found;
  const std::string key = "__shared__";
  for (size_t at = code.find(key); at != std::string::npos; at = code.find(key, at + 1)) {
    size_t before = at;
    while (before > 0 && std::isspace(static_cast<unsigned char>(code[before - 1]))) --before;
    if (before < 6 || code.compare(before - 6, 6, "extern") != 0) continue;
    if (before > 6 && is_ident(code[before - 7])) continue;
    size_t end = code.find(';', at);
    if (end == std::string::npos) continue;
    std::string decl = trim(without_align(code.substr(at + key.size(), end - at - key.size())));
    size_t bracket = decl.find('[');
    if (bracket == std::string::npos) continue;
    std::string head = trim(decl.substr(0, bracket));
    size_t name_begin = head.size();
    while (name_begin > 0 && is_ident(head[name_begin - 1])) --name_begin;
    found.push_back({trim(head.substr(0, name_begin)), head.substr(name_begin)});
  }
  return found;
}

// A `[extern] __shared__ [__align__(n)] TYPE NAME[...];` declaration.
struct SharedDecl {
  size_t name_at;  // where NAME starts
  size_t end;      // just past the ';'
  std::string type;
  std::string name;
  bool is_extern = false;
  bool in_function = false;  // inside braces: a block-scope declaration
};

std::vector<SharedDecl> shared_declarations(const std::string& code) {
  std::vector<SharedDecl> found;
  const std::string key = "__shared__";
  int depth = 0;
  size_t scanned = 0;
  for (size_t at = code.find(key); at != std::string::npos; at = code.find(key, at + 1)) {
    for (; scanned < at; ++scanned)
      depth += code[scanned] == '{' ? 1 : code[scanned] == '}' ? -1 : 0;
    if (at > 0 && is_ident(code[at - 1])) continue;
    if (at + key.size() < code.size() && is_ident(code[at + key.size()])) continue;
    size_t before = at;
    while (before > 0 && std::isspace(static_cast<unsigned char>(code[before - 1]))) --before;
    bool is_extern = before >= 6 && code.compare(before - 6, 6, "extern") == 0 &&
                     (before == 6 || !is_ident(code[before - 7]));
    size_t end = code.find(';', at);
    if (end == std::string::npos) continue;
    std::string decl = trim(without_align(code.substr(at + key.size(), end - at - key.size())));
    size_t bracket = decl.find('[');
    if (bracket == std::string::npos) continue;
    std::string head = trim(decl.substr(0, bracket));
    size_t name_begin = head.size();
    while (name_begin > 0 && is_ident(head[name_begin - 1])) --name_begin;
    SharedDecl d;
    d.type = trim(head.substr(0, name_begin));
    d.name = head.substr(name_begin);
    d.end = end + 1;
    d.is_extern = is_extern;
    d.in_function = depth > 0;
    // NAME followed (after spaces) by '[', searched for from the declaration's start.
    for (size_t n = code.find(d.name, at); n != std::string::npos && n < end;
         n = code.find(d.name, n + 1)) {
      size_t after = n + d.name.size();
      while (after < end && std::isspace(static_cast<unsigned char>(code[after]))) ++after;
      if ((n == 0 || !is_ident(code[n - 1])) && after < end && code[after] == '[') {
        d.name_at = n;
        found.push_back(d);
        break;
      }
    }
  }
  return found;
}

// The extern declarations are renamed (and the array defined under the new name) only when all
// are block-scope: a namespace-scope name cannot be a per-thread pointer.
bool rename_extern(const std::vector<SharedDecl>& decls) {
  bool any = false;
  for (const SharedDecl& d : decls) {
    if (!d.is_extern) continue;
    if (!d.in_function) return false;
    any = true;
  }
  return any;
}

constexpr const char* kRedZone =
    "static thread_local char cutune_emu_redzone_{}[128] __attribute__((used, no_reorder));";

}  // namespace

std::string sanitized_kernel_source(const std::string& code) {
  std::vector<SharedDecl> decls = shared_declarations(code);
  const bool extern_renamed = rename_extern(decls);
  std::string out;
  size_t copied = 0;
  int n = 0;
  for (const SharedDecl& d : decls) {
    bool rename = d.is_extern ? extern_renamed : d.in_function;
    out.append(code, copied, d.name_at - copied);
    if (rename) out += kSharedStoragePrefix;
    out.append(code, d.name_at, d.end - d.name_at);
    if (!d.is_extern) out += " " + fmt::format(kRedZone, n++);
    if (rename) {
      out += fmt::format(" auto* const {0} = cutune_emu_opaque({1}{0});", d.name,
                         kSharedStoragePrefix);
    }
    copied = d.end;
  }
  out.append(code, copied, std::string::npos);
  return out;
}

Postlude make_postlude(const CudaSource& src, const std::string& kernel_file, bool sanitize) {
  Postlude out;
  std::string& t = out.text;
  t += "// Generated by cutune's emulator after the kernel below; see src/emulator/postlude.h.\n";
  t += fmt::format("#include \"{}\"\n\n", kernel_file);

  std::vector<ExternShared> dynamic = extern_shared_arrays(src.code);
  const std::string dynamic_prefix =
      sanitize && rename_extern(shared_declarations(src.code)) ? kSharedStoragePrefix : "";
  std::set<std::string> names;
  for (const ExternShared& d : dynamic) names.insert(d.name);
  if (names.size() > 1) {
    out.error =
        fmt::format("{}: the emulator supports one extern __shared__ array per kernel, found {}",
                    src.kernel_name, fmt::join(names, ", "));
    return out;
  }
  if (!dynamic.empty()) {
    const ExternShared& d = dynamic.front();
    t += fmt::format(
        // 1024: a TMA destination with the 128-byte swizzle may start at its base.
        "thread_local CUTUNE_EMU_KEEP_ORDER __attribute__((aligned(1024))) {0} {1}[({2}u + "
        "sizeof({0}) - 1) / "
        "sizeof({0}) > 0 ? ({2}u + sizeof({0}) - 1) / sizeof({0}) : 1];\n\n",
        d.type, dynamic_prefix + d.name, src.launch.dynamic_smem_bytes);
    if (sanitize) t += fmt::format("{}\n\n", fmt::format(kRedZone, "dynamic"));
  }
  if (sanitize) {
    t += fmt::format(
        "extern \"C\" __attribute__((visibility(\"default\"))) const "
        "cutune_emu_abi::SharedArrayInfo {}[] = {{\n",
        cutune_emu_abi::kSharedArraysSymbol);
    for (const SharedDecl& s : shared_declarations(src.code)) {
      if (!s.is_extern) t += fmt::format("    {{\"{}\", sizeof({}), 0}},\n", s.name, s.type);
    }
    if (!dynamic.empty()) {
      t += fmt::format("    {{\"{}\", sizeof({}), {}}},\n", dynamic.front().name,
                       dynamic.front().type, src.launch.dynamic_smem_bytes);
    }
    t += "    {nullptr, 0, 0}};\n\n";
  }

  const std::string& k = src.kernel_name;
  t += fmt::format(
      "static_assert(cutune_emu_arity(&{0}) == {1}, \"{0} takes a different number of "
      "parameters than its CudaSource lists ({1})\");\n",
      k, src.params.size());
  for (size_t i = 0; i < src.params.size(); ++i) {
    const KernelParam& p = src.params[i];
    t += fmt::format(
        "static_assert(cutune_emu_param_is_pointer<{1}>(&{0}) == {2}, \"parameter {1} ({3}) "
        "of {0} is {4}a pointer in the kernel but {5}in its CudaSource\");\n",
        k, i, p.is_pointer ? "true" : "false", p.name, p.is_pointer ? "not " : "",
        p.is_pointer ? "" : "not ");
  }
  t += fmt::format(
      "\nextern \"C\" __attribute__((visibility(\"default\"))) void {1}("
      "cutune_emu_abi::Thread* self, void* const* args) {{\n"
      "  cutune_emu_self = self;\n"
      "  cutune_emu_invoke(&{0}, args);\n"
      "}}\n\n"
      "extern \"C\" __attribute__((visibility(\"default\"))) void* {2}() {{\n"
      "  return &cutune_emu_self;\n"
      "}}\n",
      k, cutune_emu_abi::kThreadMainSymbol, cutune_emu_abi::kTlsTouchSymbol);
  return out;
}

}  // namespace cutune::emu
