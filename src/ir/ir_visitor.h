#pragma once
// Read-only traversal. The default for every node visits its children; a pass overrides the
// nodes it cares about and calls the base to keep recursing.

#include "src/ir/ir.h"

namespace cutune::ir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;

  void visit(const Expr& e);
  void visit(const Stmt& s);

#define CUTUNE_IR_VISIT(name) virtual void visit_node(const name* op);
  CUTUNE_IR_EXPR_NODES(CUTUNE_IR_VISIT)
  CUTUNE_IR_STMT_NODES(CUTUNE_IR_VISIT)
#undef CUTUNE_IR_VISIT
};

}  // namespace cutune::ir
