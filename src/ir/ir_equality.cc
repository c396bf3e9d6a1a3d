#include "src/ir/ir_equality.h"

namespace cutune::ir {

namespace {

bool equal_buffers(const Buffer& a, const Buffer& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  return a->name == b->name && a->type == b->type && a->scope == b->scope &&
         a->elements == b->elements && a->read_only == b->read_only;
}

template <typename Op>
bool equal_binary(const Expr& a, const Expr& b) {
  const Op* x = a.as<Op>();
  const Op* y = b.as<Op>();
  return equal(x->a, y->a) && equal(x->b, y->b);
}

}  // namespace

bool equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || !(a.type() == b.type())) return false;
  switch (a.kind()) {
    case NodeKind::IntImm:
      return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case NodeKind::FloatImm:
      return a.as<FloatImm>()->value == b.as<FloatImm>()->value;
    case NodeKind::Var:
      return a.as<Var>()->name == b.as<Var>()->name;
#define CUTUNE_IR_EQ_BINARY(name) \
  case NodeKind::name:            \
    return equal_binary<name>(a, b);
      CUTUNE_IR_BINARY_NODES(CUTUNE_IR_EQ_BINARY)
#undef CUTUNE_IR_EQ_BINARY
    case NodeKind::Not:
      return equal(a.as<Not>()->a, b.as<Not>()->a);
    case NodeKind::Select: {
      const Select* x = a.as<Select>();
      const Select* y = b.as<Select>();
      return equal(x->condition, y->condition) && equal(x->true_value, y->true_value) &&
             equal(x->false_value, y->false_value);
    }
    case NodeKind::Load: {
      const Load* x = a.as<Load>();
      const Load* y = b.as<Load>();
      return equal_buffers(x->buffer, y->buffer) && equal(x->index, y->index);
    }
    case NodeKind::Cast:
      return equal(a.as<Cast>()->value, b.as<Cast>()->value);
    case NodeKind::Call: {
      const Call* x = a.as<Call>();
      const Call* y = b.as<Call>();
      if (x->name != y->name || x->args.size() != y->args.size()) return false;
      for (size_t i = 0; i < x->args.size(); ++i) {
        if (!equal(x->args[i], y->args[i])) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

bool equal(const Stmt& a, const Stmt& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case NodeKind::For: {
      const For* x = a.as<For>();
      const For* y = b.as<For>();
      return x->var == y->var && x->kind == y->kind && equal(x->min, y->min) &&
             equal(x->extent, y->extent) && equal(x->body, y->body);
    }
    case NodeKind::Allocate: {
      const Allocate* x = a.as<Allocate>();
      const Allocate* y = b.as<Allocate>();
      return equal_buffers(x->buffer, y->buffer) && equal(x->body, y->body);
    }
    case NodeKind::Store: {
      const Store* x = a.as<Store>();
      const Store* y = b.as<Store>();
      return equal_buffers(x->buffer, y->buffer) && equal(x->index, y->index) &&
             equal(x->value, y->value);
    }
    case NodeKind::Sync:
      return true;
    case NodeKind::IfThenElse: {
      const IfThenElse* x = a.as<IfThenElse>();
      const IfThenElse* y = b.as<IfThenElse>();
      return equal(x->condition, y->condition) && equal(x->then_case, y->then_case) &&
             equal(x->else_case, y->else_case);
    }
    case NodeKind::Block: {
      const Block* x = a.as<Block>();
      const Block* y = b.as<Block>();
      if (x->stmts.size() != y->stmts.size()) return false;
      for (size_t i = 0; i < x->stmts.size(); ++i) {
        if (!equal(x->stmts[i], y->stmts[i])) return false;
      }
      return true;
    }
    case NodeKind::LetStmt: {
      const LetStmt* x = a.as<LetStmt>();
      const LetStmt* y = b.as<LetStmt>();
      return x->var == y->var && equal(x->value, y->value) && equal(x->body, y->body);
    }
    case NodeKind::Evaluate:
      return equal(a.as<Evaluate>()->value, b.as<Evaluate>()->value);
    default:
      return false;
  }
}

}  // namespace cutune::ir
