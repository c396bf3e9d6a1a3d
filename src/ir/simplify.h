#pragma once
// The simplifier: constant folding and affine canonicalisation of Int32 index arithmetic,
// using the ranges of enclosing loops (bounds.h) to drop conditions that always hold, so that
// generated indices read cleanly (`ty * 64 + tx`) and guards that a tile size makes redundant
// vanish.
//
// Integer expressions are rewritten as a sum of terms with constant coefficients plus a
// constant; floor division and modulo by a positive constant use
//   (x * c + y) / c == x + y / c   and   (x * c + y) % c == y % c   (floor semantics),
// and y / c == 0, y % c == y when 0 <= y < c is proven.

#include "src/ir/bounds.h"
#include "src/ir/ir.h"

namespace cutune::ir {

Expr simplify(const Expr& e, const BoundsEnv& env = {});
Stmt simplify(const Stmt& s, const BoundsEnv& env = {});
Kernel simplify(const Kernel& k);

}  // namespace cutune::ir
