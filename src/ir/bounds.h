#pragma once
// Interval bounds of integer expressions: the one range analysis of the IR. The simplifier
// proves its rewrites with it, code generation chooses C's `/` and `%` by it, the verifier
// checks indices with it and the cost model takes loop extents and the odds of conditions
// from it.
//
// Conventions:
// - Only integer (Int32, Int64) expressions have bounds; anything else (floats, Bool, casts,
//   loads, calls) is unbounded.
// - The ranges of variables come from the caller: a VarBounds, or a BoundsEnv by name. A loop
//   variable's range is [min, min + extent - 1].
// - Div and Mod are floor division and modulo (ir.h); a bound goes through them only for a
//   positive divisor known exactly (see Divisors).
// - Bounds are computed in int64 without overflow checks: index arithmetic stays far from it.

#include <cstdint>
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
  bool is_bounded() const { return lo && hi; }
};

// The interval arithmetic the analysis is made of, for passes that combine bounds themselves
// (the simplifier's linear forms): a + b, and i · c for a constant c.
Interval add(const Interval& a, const Interval& b);
Interval scale(const Interval& i, int64_t c);

// The range of each variable an expression names, as the pass that asks knows them.
class VarBounds {
 public:
  // Interval::everything() for a variable it knows nothing about.
  virtual Interval of(const std::string& name) const = 0;

 protected:
  ~VarBounds() = default;
};

// Ranges of the variables in scope, by name.
using BoundsEnv = std::map<std::string, Interval>;

// Which divisors a query knows exactly. The simplifier, whose rewrites need the divisor's value
// in the IR, takes only a constant (an IntImm); a pass that only asks what values an expression
// takes may also take an expression whose own bounds are a single value (a let-bound count).
enum class Divisors : uint8_t { constant, single_valued };

Interval bounds_of(const Expr& e, const VarBounds& vars, Divisors divisors = Divisors::constant);
Interval bounds_of(const Expr& e, const BoundsEnv& env);
bool provably_non_negative(const Expr& e, const BoundsEnv& env);

}  // namespace cutune::ir
