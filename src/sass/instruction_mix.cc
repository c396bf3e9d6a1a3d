#include "src/sass/instruction_mix.h"

#include <array>
#include <string_view>

namespace cutune::sass {

namespace {

bool one_of(std::string_view op, std::initializer_list<std::string_view> list) {
  for (std::string_view x : list)
    if (op == x) return true;
  return false;
}

bool is_memory(std::string_view op) {
  return one_of(op, {"LD",     "LDG",     "LDS",    "LDL",      "LDC",     "LDSM",    "LDGSTS",
                     "ST",     "STG",     "STS",    "STL",      "STSM",    "ATOM",    "ATOMG",
                     "ATOMS",  "RED",     "REDG",   "LDGMC",    "UTMALDG", "UTMASTG", "UTMAPF",
                     "UBLKCP", "UBLKRED", "UBLKPF", "UTMAREDG", "CCTL",    "ULDC"});
}

bool is_math(const Instruction& ins) {
  const std::string& op = ins.opcode;
  if (op == "HFMA2" && ins.has_modifier("MMA")) return false;  // a register move in disguise
  return one_of(
      op, {"FFMA", "FADD", "FMUL", "FFMA2", "FADD2", "FMUL2", "HFMA2", "HADD2", "HMUL2", "DFMA",
           "DADD", "DMUL", "HMMA", "HGMMA", "IMMA", "IGMMA", "DMMA", "BMMA", "QGMMA"});
}

bool is_barrier(std::string_view op) {
  return one_of(op, {"BAR", "DEPBAR", "LDGDEPBAR", "SYNCS", "WARPSYNC", "MEMBAR", "ARRIVES",
                     "WARPGROUP", "WARPGROUPSET", "ERRBAR", "FENCE"});
}

bool is_control(std::string_view op) {
  return one_of(op, {"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "NOP", "BSSY", "BSYNC",
                     "BREAK", "BPT", "YIELD", "KILL", "ACQBULK", "ELECT", "VOTE", "VOTEU"});
}

// The access width in bits of a load or store, from its size modifier (32 when none).
int width_bits(const Instruction& ins) {
  for (const std::string& m : ins.modifiers) {
    if (m == "128") return 128;
    if (m == "64") return 64;
    if (m == "U8" || m == "S8") return 8;
    if (m == "U16" || m == "S16") return 16;
  }
  return 32;
}

}  // namespace

InstructionClass classify(const Instruction& ins) {
  const std::string& op = ins.opcode;
  if (never_executed(ins)) return InstructionClass::control;
  if (is_math(ins)) return InstructionClass::math;
  if (is_memory(op)) return InstructionClass::memory;
  if (is_barrier(op)) return InstructionClass::barrier;
  if (is_control(op)) return InstructionClass::control;
  // Everything else that computes is integer or address work: IMAD, IADD3, LEA, SHF, LOP3,
  // ISETP, MOV, SEL, PRMT, VIADD, S2R, the uniform U* forms, the float compares and converts.
  return InstructionClass::integer;
}

bool never_executed(const Instruction& ins) { return ins.predicate == "!PT"; }

std::string kind_of(const Instruction& ins) {
  const std::string& op = ins.opcode;
  if (never_executed(ins)) return "@!PT";
  if (op == "LDSM" || op == "STSM") {
    // "LDSM.16.M88.4": the last modifier is the number of 8x8 matrices.
    return op + ".x" + (ins.modifiers.empty() ? std::string("1") : ins.modifiers.back());
  }
  if (op == "UTMALDG" || op == "UTMASTG") {
    for (const std::string& m : ins.modifiers)
      if (m.size() == 2 && m[1] == 'D') return op + "." + m;
    return op;
  }
  if (op == "HFMA2" && ins.has_modifier("MMA")) return "HFMA2.MMA";
  if (one_of(op, {"LDG", "LDS", "LDL", "LD", "STG", "STS", "STL", "ST", "LDGSTS"}))
    return op + "." + std::to_string(width_bits(ins));
  return op;
}

std::string class_name(InstructionClass c) {
  switch (c) {
    case InstructionClass::math:
      return "math";
    case InstructionClass::memory:
      return "memory";
    case InstructionClass::integer:
      return "integer";
    case InstructionClass::barrier:
      return "barrier";
    case InstructionClass::control:
      return "control";
  }
  return "?";
}

size_t InstructionMix::count(InstructionClass c) const {
  auto it = by_class.find(c);
  return it == by_class.end() ? 0 : it->second;
}

size_t InstructionMix::count(const std::string& kind) const {
  auto it = by_kind.find(kind);
  return it == by_kind.end() ? 0 : it->second;
}

size_t InstructionMix::count_opcode(const std::string& opcode) const {
  size_t n = 0;
  for (const auto& [kind, c] : by_kind)
    if (kind == opcode || kind.rfind(opcode + ".", 0) == 0) n += c;
  return n;
}

double InstructionMix::share(InstructionClass c) const {
  return total == 0 ? 0.0 : double(count(c)) / double(total);
}

double InstructionMix::share_of(const std::string& opcode) const {
  return total == 0 ? 0.0 : double(count_opcode(opcode)) / double(total);
}

long InstructionMix::first(const std::string& opcode) const {
  auto it = first_offset.find(opcode);
  return it == first_offset.end() ? -1 : it->second;
}

nlohmann::json InstructionMix::to_json() const {
  nlohmann::json classes = nlohmann::json::object();
  for (InstructionClass c :
       {InstructionClass::math, InstructionClass::memory, InstructionClass::integer,
        InstructionClass::barrier, InstructionClass::control})
    classes[class_name(c)] = count(c);
  nlohmann::json first = nlohmann::json::object();
  for (const auto& [op, at] : first_offset) first[op] = at;
  return {{"instructions", total}, {"classes", classes},         {"kinds", by_kind},
          {"first", first},        {"math_share", math_share()}, {"ffma_share", share_of("FFMA")}};
}

InstructionMix mix_of(const Function& function, size_t first, size_t last) {
  InstructionMix mix;
  for (size_t i = first; i <= last && i < function.instructions.size(); ++i) {
    const Instruction& ins = function.instructions[i];
    ++mix.total;
    ++mix.by_class[classify(ins)];
    const std::string kind = kind_of(ins);
    ++mix.by_kind[kind];
    mix.kind_class[kind] = classify(ins);
    mix.first_offset.try_emplace(never_executed(ins) ? kind : ins.opcode,
                                 static_cast<long>(i - first));
  }
  return mix;
}

}  // namespace cutune::sass
