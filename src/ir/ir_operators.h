#pragma once
// Operators that make templates read like the maths they implement. Integer `/` and `%` are
// floor division and floor modulo (see ir.h). Equality is spelled eq()/ne() so that `==` on
// handles is never mistaken for building IR.

#include "src/ir/ir.h"

namespace cutune::ir {

inline Expr operator+(Expr a, Expr b) { return Add::make(std::move(a), std::move(b)); }
inline Expr operator-(Expr a, Expr b) { return Sub::make(std::move(a), std::move(b)); }
inline Expr operator*(Expr a, Expr b) { return Mul::make(std::move(a), std::move(b)); }
inline Expr operator/(Expr a, Expr b) { return Div::make(std::move(a), std::move(b)); }
inline Expr operator%(Expr a, Expr b) { return Mod::make(std::move(a), std::move(b)); }
inline Expr operator-(Expr a) {
  Type t = a.type();
  return Sub::make(t.is_float() ? FloatImm::make(t, 0.0) : IntImm::make(t, 0), std::move(a));
}
inline Expr operator<(Expr a, Expr b) { return LT::make(std::move(a), std::move(b)); }
inline Expr operator<=(Expr a, Expr b) { return LE::make(std::move(a), std::move(b)); }
inline Expr operator>(Expr a, Expr b) { return GT::make(std::move(a), std::move(b)); }
inline Expr operator>=(Expr a, Expr b) { return GE::make(std::move(a), std::move(b)); }
inline Expr operator&&(Expr a, Expr b) { return And::make(std::move(a), std::move(b)); }
inline Expr operator||(Expr a, Expr b) { return Or::make(std::move(a), std::move(b)); }
inline Expr operator!(Expr a) { return Not::make(std::move(a)); }
inline Expr eq(Expr a, Expr b) { return EQ::make(std::move(a), std::move(b)); }
inline Expr ne(Expr a, Expr b) { return NE::make(std::move(a), std::move(b)); }
inline Expr min(Expr a, Expr b) { return Min::make(std::move(a), std::move(b)); }
inline Expr max(Expr a, Expr b) { return Max::make(std::move(a), std::move(b)); }
inline Expr select(Expr c, Expr t, Expr f) {
  return Select::make(std::move(c), std::move(t), std::move(f));
}
inline Expr cast(Type t, Expr v) { return Cast::make(t, std::move(v)); }

inline Expr int_var(std::string name) { return Var::make(Type::i32(), std::move(name)); }
inline Expr i32(int64_t v) { return IntImm::make(Type::i32(), v); }
inline Expr f32(double v) { return FloatImm::make(Type::f32(), v); }

// Conjunction of a list of conditions; `true` (as 1 == 1 never appears: undefined) when empty.
Expr all_of(const std::vector<Expr>& conditions);

}  // namespace cutune::ir
