#include "src/sass/sass_report.h"

#include <stdexcept>

#include <fmt/format.h>

#include "src/sass/disassembler.h"

namespace cutune::sass {

SassReport make_report(const Function& function, const PtxasInfo& ptxas, const LaunchSpec& launch) {
  SassReport r;
  r.kernel_name = function.name;
  r.registers = ptxas.parsed ? ptxas.registers : -1;
  r.spill_store_bytes = ptxas.spill_store_bytes;
  r.spill_load_bytes = ptxas.spill_load_bytes;
  r.static_shared_bytes = launch.static_smem_bytes;
  if (ptxas.parsed && ptxas.shared_bytes > 0)
    r.static_shared_bytes = static_cast<uint32_t>(ptxas.shared_bytes);
  r.dynamic_shared_bytes = launch.dynamic_smem_bytes;
  r.instructions = function.instructions.size();
  for (const Instruction& ins : function.instructions) {
    r.local_loads += ins.opcode == "LDL";
    r.local_stores += ins.opcode == "STL";
  }
  r.loops = find_loops(function).size();
  r.main_loop = main_loop(function);
  if (r.main_loop) {
    r.main_loop_begin = function.instructions[r.main_loop->first].address;
    r.main_loop_end = function.instructions[r.main_loop->last].address;
    r.mix = mix_of(function, r.main_loop->first, r.main_loop->last);
  }
  return r;
}

SassReport inspect(const CompileResult& compiled, const LaunchSpec& launch) {
  if (!compiled.ok()) throw std::runtime_error("the kernel did not compile");
  const std::vector<Function> functions = parse_nvdisasm(disassemble(compiled.cubin));
  for (const Function& f : functions)
    if (f.name == compiled.kernel_name) return make_report(f, compiled.ptxas, launch);
  throw std::runtime_error("the disassembly has no function " + compiled.kernel_name);
}

nlohmann::json SassReport::to_json() const {
  nlohmann::json j = {{"kernel", kernel_name},
                      {"registers", registers},
                      {"spill_store_bytes", spill_store_bytes},
                      {"spill_load_bytes", spill_load_bytes},
                      {"local_loads", local_loads},
                      {"local_stores", local_stores},
                      {"static_shared_bytes", static_shared_bytes},
                      {"dynamic_shared_bytes", dynamic_shared_bytes},
                      {"instructions", instructions},
                      {"loops", loops}};
  if (main_loop) {
    j["main_loop"] = mix.to_json();
    j["main_loop"]["begin"] = fmt::format("0x{:04x}", main_loop_begin);
    j["main_loop"]["end"] = fmt::format("0x{:04x}", main_loop_end);
    j["math_share"] = mix.math_share();
  } else {
    j["main_loop"] = nullptr;
    j["math_share"] = nullptr;
  }
  return j;
}

std::string SassReport::to_text() const {
  std::string s = fmt::format(
      "{}: {} registers, spills {} B stored / {} B loaded ({} STL, {} LDL), shared {} B static + "
      "{} B dynamic, {} instructions, {} loops\n",
      kernel_name, registers, spill_store_bytes, spill_load_bytes, local_stores, local_loads,
      static_shared_bytes, dynamic_shared_bytes, instructions, loops);
  if (!main_loop) return s + "no loop: straight-line code\n";
  s += fmt::format(
      "main loop 0x{:04x}-0x{:04x}: {} instructions, math_share {:.1f}%, FFMA {:.1f}%\n",
      main_loop_begin, main_loop_end, mix.total, 100 * mix.math_share(),
      100 * mix.share_of("FFMA"));
  for (InstructionClass c :
       {InstructionClass::math, InstructionClass::memory, InstructionClass::integer,
        InstructionClass::barrier, InstructionClass::control}) {
    std::string kinds;
    for (const auto& [kind, n] : mix.by_kind)
      if (mix.kind_class.at(kind) == c) kinds += fmt::format(" {} {}", kind, n);
    s += fmt::format("  {:<8} {:>4}:{}\n", class_name(c), mix.count(c), kinds);
  }
  for (const char* op : {"HMMA", "HGMMA", "BAR", "LDSM", "LDGSTS"})
    if (long at = mix.first(op); at >= 0) s += fmt::format("  first {} at +{}\n", op, at);
  return s;
}

}  // namespace cutune::sass
