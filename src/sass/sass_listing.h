#pragma once
// The instructions of one kernel as nvdisasm prints them (`nvdisasm -c`, the code sections
// only), parsed into plain values: address, guard predicate, opcode, modifiers, operands and,
// for a branch, the address it jumps to. Nothing here runs a tool; see disassembler.h.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cutune::sass {

// One machine instruction. For "@!P0 LDG.E.128 R4, desc[UR6][R8.64] ;":
// predicate "!P0", opcode "LDG", modifiers {"E", "128"}, operands "R4, desc[UR6][R8.64]".
struct Instruction {
  uint32_t address = 0;   // byte offset in the function's code section
  std::string predicate;  // "" when unguarded; "P0", "!P1", "UP0"...
  std::string opcode;
  std::vector<std::string> modifiers;
  std::string operands;
  // Branches (BRA, BRX, JMP...) to a label of this function: the label's address.
  std::optional<uint32_t> target;

  // The opcode with its modifiers, as printed: "LDG.E.128".
  std::string mnemonic() const;
  bool has_modifier(std::string_view m) const;
  // A branch back to or before itself: the latch of a loop.
  bool branches_backward() const { return target && *target <= address; }
};

// The code of one function (a kernel, or a non-inlined device function).
struct Function {
  std::string name;
  std::vector<Instruction> instructions;  // in address order
};

// Parses nvdisasm's text. Lines that are neither an instruction nor a label (directives,
// comments, blank) are skipped; branch targets are resolved against the labels of the same
// function. Never throws; text without code gives no functions.
std::vector<Function> parse_nvdisasm(std::string_view text);

}  // namespace cutune::sass
