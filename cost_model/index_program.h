#pragma once
// An index expression compiled for repeated evaluation: flattened to postfix, with loop
// variables resolved to frame positions and let-bound names inlined, so that names are looked
// up once. The loop-nest analysis evaluates the busiest access of each buffer for the lanes of a
// warp and for consecutive iterations of a loop (feature_loop_nest.h), and a split-K loop's
// extent for each value of the loop it depends on.
//
// Evaluation follows the IR's integer semantics: floor division and modulo (0 for a zero
// divisor), comparisons and logic giving 0 or 1. Casts are looked through; anything that is not
// integer or Bool arithmetic (a float, a load, a call) and a variable neither a loop nor a let
// (a kernel parameter) evaluates to 0.

#include <cstdint>
#include <vector>

#include "cost_model/loop_scope.h"
#include "src/ir/ir.h"

namespace cutune::cost_model {

// The most values one evaluation computes at once: a warp's lanes.
inline constexpr int kMaxLanes = 32;

struct IndexInstr {
  ir::NodeKind op;  // IntImm: push value; Var: push the value of frame `value`; else apply
  int64_t value = 0;
};

struct IndexProgram {
  std::vector<IndexInstr> code;
  uint64_t deps = 0;  // bits of the frames it reads
  bool ok = true;     // false where it was too deep to evaluate with the fixed stack
};

// Compiles `e` in `scope` into `p`, replacing what it held (its capacity is kept).
void compile_index(const ir::Expr& e, const LoopScope& scope, IndexProgram& p);

// Evaluates `p` for `lanes` (at most kMaxLanes) values of the loop variable of frame `sweep`
// (0, 1, ..., lanes-1) at once, every other loop variable at 0, into out[0, lanes). All zeros
// where the program is malformed.
void evaluate_lanes(const IndexProgram& p, int sweep, int lanes, int64_t* out);

}  // namespace cutune::cost_model
