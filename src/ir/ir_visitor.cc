#include "src/ir/ir_visitor.h"

namespace cutune::ir {

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
#define CUTUNE_IR_DISPATCH(name)                   \
  case NodeKind::name:                             \
    visit_node(static_cast<const name*>(e.get())); \
    return;
    CUTUNE_IR_EXPR_NODES(CUTUNE_IR_DISPATCH)
#undef CUTUNE_IR_DISPATCH
    default:
      break;
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
#define CUTUNE_IR_DISPATCH(name)                   \
  case NodeKind::name:                             \
    visit_node(static_cast<const name*>(s.get())); \
    return;
    CUTUNE_IR_STMT_NODES(CUTUNE_IR_DISPATCH)
#undef CUTUNE_IR_DISPATCH
    default:
      break;
  }
}

void IRVisitor::visit_node(const IntImm*) {}
void IRVisitor::visit_node(const FloatImm*) {}
void IRVisitor::visit_node(const Var*) {}
#define CUTUNE_IR_BINARY(name)                 \
  void IRVisitor::visit_node(const name* op) { \
    visit(op->a);                              \
    visit(op->b);                              \
  }
CUTUNE_IR_BINARY_NODES(CUTUNE_IR_BINARY)
#undef CUTUNE_IR_BINARY
void IRVisitor::visit_node(const Not* op) { visit(op->a); }
void IRVisitor::visit_node(const Select* op) {
  visit(op->condition);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit_node(const Load* op) { visit(op->index); }
void IRVisitor::visit_node(const Cast* op) { visit(op->value); }
void IRVisitor::visit_node(const Call* op) {
  for (const Expr& a : op->args) visit(a);
}

void IRVisitor::visit_node(const For* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit_node(const Allocate* op) { visit(op->body); }
void IRVisitor::visit_node(const Store* op) {
  visit(op->index);
  visit(op->value);
}
void IRVisitor::visit_node(const Sync*) {}
void IRVisitor::visit_node(const IfThenElse* op) {
  visit(op->condition);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit_node(const Block* op) {
  for (const Stmt& s : op->stmts) visit(s);
}
void IRVisitor::visit_node(const LetStmt* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_node(const Evaluate* op) { visit(op->value); }

}  // namespace cutune::ir
