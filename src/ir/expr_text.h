#pragma once
// Expression text shared by the IR printer and the CUDA code generator: infix with the fewest
// parentheses C's precedence allows. The two differ only in a few spellings, chosen by the
// style below.

#include <functional>
#include <string>

#include "src/ir/ir.h"

namespace cutune::ir {

struct ExprTextStyle {
  // CUDA C spelling: vector loads as reinterpret_casts, casts as static_cast, floor division
  // as C division only where `non_negative` proves both operands >= 0 (else a helper call).
  bool cuda = false;
  std::function<bool(const Expr&)> non_negative;  // CUDA only; may be empty (nothing proven)
  // Set when a floor-division or floor-modulo helper call was emitted.
  mutable bool used_floor_helpers = false;
};

std::string expr_text(const Expr& e, const ExprTextStyle& style);

// C spelling of a float literal of type t ("1.0f", "0.5f").
std::string float_literal(double value, Type t);

}  // namespace cutune::ir
