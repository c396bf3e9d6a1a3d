#pragma once
// What a stretch of machine code spends its instructions on: the instruction mix of a main
// loop, in the classes a GEMM's performance is read from.

#include <cstddef>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "src/sass/sass_listing.h"

namespace cutune::sass {

// The class an instruction is counted in.
enum class InstructionClass {
  math,     // FFMA FADD FMUL HFMA2 HADD2 HMUL2 DFMA DADD DMUL HMMA HGMMA IMMA DMMA (not the
            // HFMA2.MMA/ IMAD.MOV register moves ptxas uses as zero-cost copies)
  memory,   // loads and stores of any space, cp.async, TMA, ldmatrix
  integer,  // integer and address arithmetic, compares, moves, uniform-datapath ALU (U*)
  barrier,  // BAR, and the async-copy and mbarrier waits (DEPBAR, LDGDEPBAR, SYNCS, WARPSYNC)
  control,  // branches, EXIT, NOP, convergence (BSSY/BSYNC), and anything else; also any
            // instruction guarded by @!PT (never executed: ptxas's padding, as
            // "@!PT LDS RZ, [RZ]" after a DEPBAR), whatever its opcode
};

// Whether `ins` is guarded by the constant-false predicate (@!PT), so it never executes.
bool never_executed(const Instruction& ins);

// The class of one instruction.
InstructionClass classify(const Instruction& ins);

// The key an instruction is counted under in InstructionMix::by_kind: the opcode, and for
// memory instructions the access width in bits ("LDS.128", "LDG.32", "STS.64", "LDGSTS.128",
// "LDSM.x4", "UTMALDG.2D"); math and integer instructions by opcode ("FFMA", "HMMA", "IMAD");
// a never-executed instruction as "@!PT" (and its first position under that name too).
std::string kind_of(const Instruction& ins);

struct InstructionMix {
  size_t total = 0;
  std::map<InstructionClass, size_t> by_class;
  std::map<std::string, size_t> by_kind;
  std::map<std::string, InstructionClass> kind_class;  // the class of each kind in by_kind
  // Offset from the start of the range of the first instruction of an opcode; -1 if absent.
  std::map<std::string, long> first_offset;

  size_t count(InstructionClass c) const;
  size_t count(const std::string& kind) const;  // by_kind, 0 when absent
  // All kinds starting with `opcode` + "." or equal to it ("LDS" sums LDS.32, LDS.128...).
  size_t count_opcode(const std::string& opcode) const;
  double share(InstructionClass c) const;  // of total; 0 for an empty mix
  double math_share() const { return share(InstructionClass::math); }
  double share_of(const std::string& opcode) const;  // count_opcode / total
  long first(const std::string& opcode) const;       // first_offset or -1

  nlohmann::json to_json() const;
};

// The mix of instructions [first, last] (inclusive) of `function`.
InstructionMix mix_of(const Function& function, size_t first, size_t last);

std::string class_name(InstructionClass c);

}  // namespace cutune::sass
