#pragma once
// Structural equality: same node kinds, types, names, constants and children. Buffers are
// equal when their name, type, scope and size agree.

#include "src/ir/ir.h"

namespace cutune::ir {

bool equal(const Expr& a, const Expr& b);
bool equal(const Stmt& a, const Stmt& b);

}  // namespace cutune::ir
