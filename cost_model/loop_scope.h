#pragma once
// The loops and lets enclosing a point of the loop-nest walk (feature_loop_nest.h), and what
// follows from them: the loops an expression depends on, the range of its values (by
// src/ir/bounds.h) and the fraction of iterations a condition holds.
//
// A variable is the innermost loop of its name, else the innermost let of its name, else
// unknown (a kernel parameter): it depends on no loop and is unbounded.

#include <cstdint>
#include <string>
#include <vector>

#include "src/ir/bounds.h"
#include "src/ir/ir.h"

namespace cutune::cost_model {

struct LoopFrame {
  const std::string* name;
  int64_t min;
  int64_t extent;  // the loop's upper bound (see feature_loop_nest.h), at least 1
  ir::ForKind kind;
  // Products of the extents of this loop and those enclosing it: unbound, thread- and
  // block-bound ones.
  double serial, threads, blocks;
};

struct LetBinding {
  const std::string* name;
  const ir::Expr* value;
  uint64_t deps;  // bits of the frames the value depends on
  ir::Interval range;
};

// Products of loops' extents: unbound ones (iterations per thread), thread- and block-bound
// ones.
struct Extents {
  double serial = 1, threads = 1, blocks = 1;
};

// Frame f is bit (1 << f) of a dependency mask; frames past the 64th have no bit.
class LoopScope final : public ir::VarBounds {
 public:
  std::vector<LoopFrame> frames;  // outermost first
  std::vector<LetBinding> lets;   // outermost first

  // The position in `frames` of the innermost loop named `name`, or -1.
  int frame_of(const std::string& name) const;
  // The innermost let named `name`, or nullptr.
  const LetBinding* let_of(const std::string& name) const;
  // A loop variable ranges over [min, min + extent - 1]; a let-bound one over its value's range.
  ir::Interval of(const std::string& name) const override;
  // The values `e` takes in this scope (a divisor known to be one value counts as a constant).
  ir::Interval range(const ir::Expr& e) const {
    return ir::bounds_of(e, *this, ir::Divisors::single_valued);
  }

  // Of all the loops in scope.
  Extents extents() const;
  // Of the loops in `mask` (and every frame past the 64th).
  Extents extents(uint64_t mask) const;
};

// The frames `e` depends on, directly or through lets. The index of a load and the arguments of
// a call do not count: they depend on memory, not on the loops.
uint64_t deps_of(const ir::Expr& e, const LoopScope& scope);

// The fraction of the iteration space where `cond` holds, with the operands of a comparison
// taken as independent and uniform over their ranges; 1 where nothing is known.
double probability(const ir::Expr& cond, const LoopScope& scope);

}  // namespace cutune::cost_model
