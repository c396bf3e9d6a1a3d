#pragma once
// Rewriting traversal. The default for every node mutates its children and rebuilds the node
// only if a child changed, so unchanged subtrees stay shared (same_as holds).

#include "src/ir/ir.h"

namespace cutune::ir {

class IRMutator {
 public:
  virtual ~IRMutator() = default;

  Expr mutate(const Expr& e);
  Stmt mutate(const Stmt& s);

#define CUTUNE_IR_MUTATE(name) virtual Expr visit_node(const name* op, const Expr& self);
  CUTUNE_IR_EXPR_NODES(CUTUNE_IR_MUTATE)
#undef CUTUNE_IR_MUTATE
#define CUTUNE_IR_MUTATE(name) virtual Stmt visit_node(const name* op, const Stmt& self);
  CUTUNE_IR_STMT_NODES(CUTUNE_IR_MUTATE)
#undef CUTUNE_IR_MUTATE
};

// Replaces every Var named `name` with `value` (no capture check: names are unique).
Stmt substitute(const Stmt& s, const std::string& name, const Expr& value);
Expr substitute(const Expr& e, const std::string& name, const Expr& value);

}  // namespace cutune::ir
