#include "src/ir/ir_mutator.h"

namespace cutune::ir {

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
#define CUTUNE_IR_DISPATCH(name) \
  case NodeKind::name:           \
    return visit_node(static_cast<const name*>(e.get()), e);
    CUTUNE_IR_EXPR_NODES(CUTUNE_IR_DISPATCH)
#undef CUTUNE_IR_DISPATCH
    default:
      break;
  }
  return e;
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
#define CUTUNE_IR_DISPATCH(name) \
  case NodeKind::name:           \
    return visit_node(static_cast<const name*>(s.get()), s);
    CUTUNE_IR_STMT_NODES(CUTUNE_IR_DISPATCH)
#undef CUTUNE_IR_DISPATCH
    default:
      break;
  }
  return s;
}

Expr IRMutator::visit_node(const IntImm*, const Expr& self) { return self; }
Expr IRMutator::visit_node(const FloatImm*, const Expr& self) { return self; }
Expr IRMutator::visit_node(const Var*, const Expr& self) { return self; }

#define CUTUNE_IR_BINARY(name)                                   \
  Expr IRMutator::visit_node(const name* op, const Expr& self) { \
    Expr a = mutate(op->a);                                      \
    Expr b = mutate(op->b);                                      \
    if (a.same_as(op->a) && b.same_as(op->b)) return self;       \
    return name::make(std::move(a), std::move(b));               \
  }
CUTUNE_IR_BINARY_NODES(CUTUNE_IR_BINARY)
#undef CUTUNE_IR_BINARY

Expr IRMutator::visit_node(const Not* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : Not::make(std::move(a));
}

Expr IRMutator::visit_node(const Select* op, const Expr& self) {
  Expr c = mutate(op->condition);
  Expr t = mutate(op->true_value);
  Expr f = mutate(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
    return self;
  }
  return Select::make(std::move(c), std::move(t), std::move(f));
}

Expr IRMutator::visit_node(const Load* op, const Expr& self) {
  Expr i = mutate(op->index);
  return i.same_as(op->index) ? self : Load::make(op->buffer, std::move(i), op->lanes());
}

Expr IRMutator::visit_node(const Cast* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : Cast::make(op->type, std::move(v));
}

Expr IRMutator::visit_node(const Call* op, const Expr& self) {
  std::vector<Expr> args;
  bool changed = false;
  args.reserve(op->args.size());
  for (const Expr& a : op->args) {
    args.push_back(mutate(a));
    changed = changed || !args.back().same_as(a);
  }
  return changed ? Call::make(op->type, op->name, std::move(args)) : self;
}

Stmt IRMutator::visit_node(const For* op, const Stmt& self) {
  Expr mn = mutate(op->min);
  Expr ext = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return self;
  return For::make(op->var, std::move(mn), std::move(ext), op->kind, std::move(body));
}

Stmt IRMutator::visit_node(const Allocate* op, const Stmt& self) {
  Stmt body = mutate(op->body);
  return body.same_as(op->body) ? self : Allocate::make(op->buffer, std::move(body));
}

Stmt IRMutator::visit_node(const Store* op, const Stmt& self) {
  Expr i = mutate(op->index);
  Expr v = mutate(op->value);
  if (i.same_as(op->index) && v.same_as(op->value)) return self;
  return Store::make(op->buffer, std::move(i), std::move(v));
}

Stmt IRMutator::visit_node(const Sync*, const Stmt& self) { return self; }

Stmt IRMutator::visit_node(const IfThenElse* op, const Stmt& self) {
  Expr c = mutate(op->condition);
  Stmt t = mutate(op->then_case);
  Stmt e = mutate(op->else_case);
  if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) {
    return self;
  }
  return IfThenElse::make(std::move(c), std::move(t), std::move(e));
}

Stmt IRMutator::visit_node(const Block* op, const Stmt& self) {
  std::vector<Stmt> stmts;
  bool changed = false;
  stmts.reserve(op->stmts.size());
  for (const Stmt& s : op->stmts) {
    stmts.push_back(mutate(s));
    changed = changed || !stmts.back().same_as(s);
  }
  return changed ? Block::make(std::move(stmts)) : self;
}

Stmt IRMutator::visit_node(const LetStmt* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt body = mutate(op->body);
  if (v.same_as(op->value) && body.same_as(op->body)) return self;
  return LetStmt::make(op->var, std::move(v), std::move(body));
}

Stmt IRMutator::visit_node(const Evaluate* op, const Stmt& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : Evaluate::make(std::move(v));
}

namespace {

class Substituter : public IRMutator {
 public:
  Substituter(const std::string& name, const Expr& value) : name_(name), value_(value) {}
  using IRMutator::visit_node;
  Expr visit_node(const Var* op, const Expr& self) override {
    return op->name == name_ ? value_ : self;
  }

 private:
  const std::string& name_;
  const Expr& value_;
};

}  // namespace

Stmt substitute(const Stmt& s, const std::string& name, const Expr& value) {
  Substituter sub(name, value);
  return sub.mutate(s);
}

Expr substitute(const Expr& e, const std::string& name, const Expr& value) {
  Substituter sub(name, value);
  return sub.mutate(e);
}

}  // namespace cutune::ir
