#pragma once
// The simplifier: constant folding and affine canonicalisation of Int32 index arithmetic,
// using the ranges of enclosing loops to drop conditions that always hold, so that generated
// indices read cleanly (`ty * 64 + tx`) and guards that a tile size makes redundant vanish.
//
// Integer expressions are rewritten as a sum of terms with constant coefficients plus a
// constant; floor division and modulo by a positive constant use
//   (x * c + y) / c == x + y / c   and   (x * c + y) % c == y % c   (floor semantics),
// and y / c == 0, y % c == y when 0 <= y < c is proven.

#include <map>
#include <optional>
#include <string>

#include "src/ir/ir.h"

namespace cutune::ir {

// A closed interval of integer values; an absent bound is unbounded.
struct Interval {
  std::optional<int64_t> lo, hi;
  static Interval point(int64_t v) { return {v, v}; }
  static Interval everything() { return {}; }
  bool is_point() const { return lo && hi && *lo == *hi; }
};

// Ranges of the variables in scope (loop variables: [min, min + extent - 1]).
using BoundsEnv = std::map<std::string, Interval>;

Interval bounds_of(const Expr& e, const BoundsEnv& env);
bool provably_non_negative(const Expr& e, const BoundsEnv& env);

Expr simplify(const Expr& e, const BoundsEnv& env = {});
Stmt simplify(const Stmt& s, const BoundsEnv& env = {});
Kernel simplify(const Kernel& k);

}  // namespace cutune::ir
