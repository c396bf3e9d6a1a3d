#include "src/ir/simplify.h"

#include <algorithm>
#include <vector>

#include "src/base/int_math.h"
#include "src/ir/ir_equality.h"
#include "src/ir/ir_mutator.h"
#include "src/ir/ir_operators.h"

namespace cutune::ir {

namespace {

// Sum of coefficient * term, plus a constant. Terms are non-linear Int32 expressions.
struct Linear {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;

  void add_term(const Expr& t, int64_t coeff) {
    if (coeff == 0) return;
    for (auto& [e, c] : terms) {
      if (equal(e, t)) {
        c += coeff;
        return;
      }
    }
    terms.emplace_back(t, coeff);
  }
  void add(const Linear& o, int64_t factor) {
    for (const auto& [e, c] : o.terms) add_term(e, c * factor);
    constant += o.constant * factor;
  }
  void drop_zero_terms() {
    std::erase_if(terms, [](const auto& t) { return t.second == 0; });
  }
  std::optional<int64_t> as_constant() const {
    for (const auto& t : terms) {
      if (t.second != 0) return std::nullopt;
    }
    return constant;
  }
};

class Simplifier : public IRMutator {
 public:
  explicit Simplifier(BoundsEnv env) : env_(std::move(env)) {}

  using IRMutator::mutate;
  using IRMutator::visit_node;

  Interval bounds(const Expr& e) const { return bounds_of(e, env_); }

  Interval bounds(const Linear& l) const {
    Interval r = Interval::point(l.constant);
    for (const auto& [t, c] : l.terms) {
      r = add(r, scale(bounds(t), c));
    }
    return r;
  }

  // Linear form of an already simplified integer expression.
  Linear linearize(const Expr& e) const {
    Linear l;
    if (auto c = as_const_int(e)) {
      l.constant = *c;
      return l;
    }
    switch (e.kind()) {
      case NodeKind::Add:
        l = linearize(e.as<Add>()->a);
        l.add(linearize(e.as<Add>()->b), 1);
        return l;
      case NodeKind::Sub:
        l = linearize(e.as<Sub>()->a);
        l.add(linearize(e.as<Sub>()->b), -1);
        return l;
      case NodeKind::Mul: {
        const Mul* op = e.as<Mul>();
        if (auto c = as_const_int(op->b)) {
          l.add(linearize(op->a), *c);
          return l;
        }
        if (auto c = as_const_int(op->a)) {
          l.add(linearize(op->b), *c);
          return l;
        }
        break;
      }
      default:
        break;
    }
    l.add_term(e, 1);
    return l;
  }

  // Rebuilds a canonical expression: terms in order of appearance, constant last,
  // subtraction for negative coefficients.
  Expr rebuild(Linear l, Type t) const {
    l.drop_zero_terms();
    Expr result;
    for (const auto& [term, coeff] : l.terms) {
      int64_t mag = coeff < 0 ? -coeff : coeff;
      Expr piece = mag == 1 ? term : Mul::make(term, IntImm::make(t, mag));
      if (!result.defined()) {
        result = coeff < 0 ? Sub::make(IntImm::make(t, 0), piece) : piece;
      } else {
        result = coeff < 0 ? Sub::make(result, piece) : Add::make(result, piece);
      }
    }
    if (!result.defined()) return IntImm::make(t, l.constant);
    if (l.constant > 0) result = Add::make(result, IntImm::make(t, l.constant));
    if (l.constant < 0) result = Sub::make(result, IntImm::make(t, -l.constant));
    return result;
  }

  Expr canonical(const Expr& e) { return rebuild(linearize(e), e.type()); }

  // `self` when `result` is structurally the same, so that simplifying simplified IR returns
  // the very same nodes (unchanged subtrees stay shared, as with every mutator).
  static Expr keep(const Expr& self, Expr result) {
    return equal(result, self) ? self : std::move(result);
  }

  Expr visit_node(const Add* op, const Expr& self) override { return arith(op, self); }
  Expr visit_node(const Sub* op, const Expr& self) override { return arith(op, self); }
  Expr visit_node(const Mul* op, const Expr& self) override {
    if (!op->type.is_int()) return fold_float(op, self);
    Expr a = mutate(op->a), b = mutate(op->b);
    Linear la = linearize(a), lb = linearize(b);
    if (auto c = lb.as_constant()) {
      Linear r;
      r.add(la, *c);
      return keep(self, rebuild(r, op->type));
    }
    if (auto c = la.as_constant()) {
      Linear r;
      r.add(lb, *c);
      return keep(self, rebuild(r, op->type));
    }
    return keep(self, Mul::make(a, b));
  }

  Expr visit_node(const Div* op, const Expr& self) override {
    if (!op->type.is_int()) return fold_float(op, self);
    return keep(self, divide(op));
  }

  Expr divide(const Div* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto c = as_const_int(b);
    if (!c || *c <= 0) return Div::make(a, b);
    if (*c == 1) return a;
    Linear la = linearize(a);
    Linear quotient, rest;
    for (const auto& [t, k] : la.terms) {
      if (k % *c == 0) {
        quotient.add_term(t, k / *c);
      } else {
        rest.add_term(t, k);
      }
    }
    quotient.constant = floor_div(la.constant, *c);
    rest.constant = floor_mod(la.constant, *c);
    Interval rb = bounds(rest);
    if (rb.lo && rb.hi && *rb.lo >= 0 && *rb.hi < *c) return rebuild(quotient, op->type);
    if (rest.terms.empty()) return rebuild(quotient, op->type);
    Expr residual = Div::make(rebuild(rest, op->type), b);
    quotient.add_term(residual, 1);
    return rebuild(quotient, op->type);
  }

  Expr visit_node(const Mod* op, const Expr& self) override {
    if (!op->type.is_int()) return fold_float(op, self);
    return keep(self, modulo(op));
  }

  Expr modulo(const Mod* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto c = as_const_int(b);
    if (!c || *c <= 0) return Mod::make(a, b);
    if (*c == 1) return IntImm::make(op->type, 0);
    Linear la = linearize(a), rest;
    for (const auto& [t, k] : la.terms) {
      if (k % *c != 0) rest.add_term(t, k);
    }
    rest.constant = floor_mod(la.constant, *c);
    Interval rb = bounds(rest);
    if (rb.lo && rb.hi && *rb.lo >= 0 && *rb.hi < *c) return rebuild(rest, op->type);
    return Mod::make(rebuild(rest, op->type), b);
  }

  Expr visit_node(const Min* op, const Expr& self) override { return min_max(op, self, true); }
  Expr visit_node(const Max* op, const Expr& self) override { return min_max(op, self, false); }

  Expr visit_node(const EQ* op, const Expr& self) override { return compare(op, self); }
  Expr visit_node(const NE* op, const Expr& self) override { return compare(op, self); }
  Expr visit_node(const LT* op, const Expr& self) override { return compare(op, self); }
  Expr visit_node(const LE* op, const Expr& self) override { return compare(op, self); }
  Expr visit_node(const GT* op, const Expr& self) override { return compare(op, self); }
  Expr visit_node(const GE* op, const Expr& self) override { return compare(op, self); }

  Expr visit_node(const And* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    if (ca) return *ca ? b : a;
    if (cb) return *cb ? a : b;
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return And::make(a, b);
  }
  Expr visit_node(const Or* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    if (ca) return *ca ? a : b;
    if (cb) return *cb ? b : a;
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return Or::make(a, b);
  }
  Expr visit_node(const Not* op, const Expr& self) override {
    Expr a = mutate(op->a);
    if (auto c = as_const_int(a)) return IntImm::make(Type::boolean(), !*c);
    if (const Not* inner = a.as<Not>()) return inner->a;
    return a.same_as(op->a) ? self : Not::make(a);
  }
  Expr visit_node(const Select* op, const Expr& self) override {
    Expr c = mutate(op->condition);
    if (auto v = as_const_int(c)) return mutate(*v ? op->true_value : op->false_value);
    Expr t = mutate(op->true_value), f = mutate(op->false_value);
    if (equal(t, f)) return t;
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
      return self;
    }
    return Select::make(c, t, f);
  }
  Expr visit_node(const Cast* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (auto c = as_const_int(v); c && op->type.is_float()) return FloatImm::make(op->type, *c);
    if (auto c = as_const_int(v); c && op->type.is_int()) return IntImm::make(op->type, *c);
    return v.same_as(op->value) ? self : Cast::make(op->type, v);
  }

  Stmt visit_node(const For* op, const Stmt& self) override {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    auto e = as_const_int(ext);
    if (e && *e <= 0) return Stmt();
    if (e && *e == 1 && !is_bound(op->kind)) {
      return mutate(substitute(op->body, op->var, mn));
    }
    Interval range = bounds(mn);
    Interval ext_range = bounds(ext);
    Interval var_range{range.lo, add(add(range, ext_range), Interval::point(-1)).hi};
    auto saved = env_.find(op->var) != env_.end() ? std::optional(env_[op->var]) : std::nullopt;
    env_[op->var] = var_range;
    Stmt body = mutate(op->body);
    if (saved)
      env_[op->var] = *saved;
    else
      env_.erase(op->var);
    if (!body.defined()) return Stmt();
    if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return self;
    return For::make(op->var, mn, ext, op->kind, body);
  }

  Stmt visit_node(const LetStmt* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    auto saved = env_.find(op->var) != env_.end() ? std::optional(env_[op->var]) : std::nullopt;
    env_[op->var] = v.type().is_int() ? bounds(v) : Interval::everything();
    Stmt body = mutate(op->body);
    if (saved)
      env_[op->var] = *saved;
    else
      env_.erase(op->var);
    if (!body.defined()) return Stmt();
    if (v.same_as(op->value) && body.same_as(op->body)) return self;
    return LetStmt::make(op->var, v, body);
  }

  Stmt visit_node(const IfThenElse* op, const Stmt& self) override {
    Expr c = mutate(op->condition);
    if (auto v = as_const_int(c)) return mutate(*v ? op->then_case : op->else_case);
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (!t.defined() && !e.defined()) return Stmt();
    if (!t.defined()) return IfThenElse::make(Not::make(c), e);
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) {
      return self;
    }
    return IfThenElse::make(c, t, e);
  }

  Stmt visit_node(const Block* op, const Stmt& self) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const Stmt& s : op->stmts) {
      Stmt m = mutate(s);
      changed = changed || !m.same_as(s);
      if (m.defined()) stmts.push_back(m);
    }
    if (!changed) return self;
    if (stmts.empty()) return Stmt();
    return Block::make(std::move(stmts));
  }

  Stmt visit_node(const Allocate* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (!body.defined()) return Stmt();
    return body.same_as(op->body) ? self : Allocate::make(op->buffer, body);
  }

 private:
  template <typename Op>
  Expr arith(const Op* op, const Expr& self) {
    if (!op->type.is_int()) return fold_float(op, self);
    Expr a = mutate(op->a), b = mutate(op->b);
    Linear l = linearize(a);
    l.add(linearize(b), Op::kKind == NodeKind::Add ? 1 : -1);
    return keep(self, rebuild(l, op->type));
  }

  template <typename Op>
  Expr fold_float(const Op* op, const Expr& self) {
    Expr a = mutate(op->a), b = mutate(op->b);
    const FloatImm* fa = a.as<FloatImm>();
    const FloatImm* fb = b.as<FloatImm>();
    if (fa && fb) {
      double x = fa->value, y = fb->value, r = 0;
      switch (Op::kKind) {
        case NodeKind::Add:
          r = x + y;
          break;
        case NodeKind::Sub:
          r = x - y;
          break;
        case NodeKind::Mul:
          r = x * y;
          break;
        case NodeKind::Div:
          r = x / y;
          break;
        default:
          return Op::make(a, b);
      }
      return FloatImm::make(op->type, r);
    }
    if constexpr (Op::kKind == NodeKind::Mul) {
      if (fb && fb->value == 1.0) return a;
      if (fa && fa->value == 1.0) return b;
    }
    if constexpr (Op::kKind == NodeKind::Add) {
      if (fb && fb->value == 0.0) return a;
      if (fa && fa->value == 0.0) return b;
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return Op::make(a, b);
  }

  template <typename Op>
  Expr min_max(const Op* op, const Expr& self, bool is_min) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (op->type.is_int()) {
      Linear d = linearize(a);
      d.add(linearize(b), -1);
      Interval db = bounds(d);
      if (db.hi && *db.hi <= 0) return is_min ? a : b;  // a <= b
      if (db.lo && *db.lo >= 0) return is_min ? b : a;  // a >= b
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return Op::make(a, b);
  }

  template <typename Op>
  Expr compare(const Op* op, const Expr& self) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.type().is_int()) {
      Linear d = linearize(a);
      d.add(linearize(b), -1);
      Interval db = bounds(d);
      auto yes = [] { return IntImm::make(Type::boolean(), 1); };
      auto no = [] { return IntImm::make(Type::boolean(), 0); };
      switch (Op::kKind) {
        case NodeKind::LT:
          if (db.hi && *db.hi < 0) return yes();
          if (db.lo && *db.lo >= 0) return no();
          break;
        case NodeKind::LE:
          if (db.hi && *db.hi <= 0) return yes();
          if (db.lo && *db.lo > 0) return no();
          break;
        case NodeKind::GT:
          if (db.lo && *db.lo > 0) return yes();
          if (db.hi && *db.hi <= 0) return no();
          break;
        case NodeKind::GE:
          if (db.lo && *db.lo >= 0) return yes();
          if (db.hi && *db.hi < 0) return no();
          break;
        case NodeKind::EQ:
          if (db.is_point()) return *db.lo == 0 ? yes() : no();
          if ((db.lo && *db.lo > 0) || (db.hi && *db.hi < 0)) return no();
          break;
        case NodeKind::NE:
          if (db.is_point()) return *db.lo != 0 ? yes() : no();
          if ((db.lo && *db.lo > 0) || (db.hi && *db.hi < 0)) return yes();
          break;
        default:
          break;
      }
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return Op::make(a, b);
  }

  BoundsEnv env_;
};

}  // namespace

Expr simplify(const Expr& e, const BoundsEnv& env) {
  Simplifier s(env);
  return s.mutate(e);
}

Stmt simplify(const Stmt& st, const BoundsEnv& env) {
  Simplifier s(env);
  return s.mutate(st);
}

Kernel simplify(const Kernel& k) {
  Kernel out = k;
  out.body = simplify(k.body);
  if (!out.body.defined()) throw IRError("kernel " + k.name + " simplified to nothing");
  return out;
}

}  // namespace cutune::ir
