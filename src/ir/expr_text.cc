#include "src/ir/expr_text.h"

#include <cmath>

#include <fmt/format.h>

namespace cutune::ir {

namespace {

// C precedence levels, higher binds tighter.
enum Prec : int {
  kTernary = 1,
  kOr = 2,
  kAnd = 3,
  kEquality = 4,
  kRelational = 5,
  kAdditive = 6,
  kMultiplicative = 7,
  kUnary = 8,
  kAtom = 9
};

struct Text {
  std::string s;
  int prec;
};

class Printer {
 public:
  explicit Printer(const ExprTextStyle& style) : style_(style) {}

  Text print(const Expr& e) {
    switch (e.kind()) {
      case NodeKind::IntImm: {
        int64_t v = e.as<IntImm>()->value;
        if (e.type().is_bool()) return {v ? "true" : "false", kAtom};
        std::string s =
            e.type().dtype == DType::Int64 ? fmt::format("{}LL", v) : fmt::format("{}", v);
        return {s, v < 0 ? kUnary : kAtom};
      }
      case NodeKind::FloatImm: {
        double v = e.as<FloatImm>()->value;
        return {float_literal(v, e.type()), v < 0 ? kUnary : kAtom};
      }
      case NodeKind::Var:
        return {e.as<Var>()->name, kAtom};
      case NodeKind::Add:
        return binary(e.as<Add>(), "+", kAdditive);
      case NodeKind::Sub:
        return binary(e.as<Sub>(), "-", kAdditive);
      case NodeKind::Mul:
        return binary(e.as<Mul>(), "*", kMultiplicative);
      case NodeKind::Div:
        return division(e.as<Div>()->a, e.as<Div>()->b, "/", "cutune_floordiv");
      case NodeKind::Mod:
        return division(e.as<Mod>()->a, e.as<Mod>()->b, "%", "cutune_floormod");
      case NodeKind::Min:
        return call2(e.as<Min>(), e.type().is_float() && style_.cuda ? "fminf" : "min");
      case NodeKind::Max:
        return call2(e.as<Max>(), e.type().is_float() && style_.cuda ? "fmaxf" : "max");
      case NodeKind::EQ:
        return binary(e.as<EQ>(), "==", kEquality);
      case NodeKind::NE:
        return binary(e.as<NE>(), "!=", kEquality);
      case NodeKind::LT:
        return binary(e.as<LT>(), "<", kRelational);
      case NodeKind::LE:
        return binary(e.as<LE>(), "<=", kRelational);
      case NodeKind::GT:
        return binary(e.as<GT>(), ">", kRelational);
      case NodeKind::GE:
        return binary(e.as<GE>(), ">=", kRelational);
      case NodeKind::And:
        return binary(e.as<And>(), "&&", kAnd);
      case NodeKind::Or:
        return binary(e.as<Or>(), "||", kOr);
      case NodeKind::Not:
        return {"!" + wrap(print(e.as<Not>()->a), kUnary), kUnary};
      case NodeKind::Select: {
        const Select* op = e.as<Select>();
        return {fmt::format("{} ? {} : {}", wrap(print(op->condition), kOr + 0),
                            wrap(print(op->true_value), kTernary),
                            wrap(print(op->false_value), kTernary)),
                kTernary};
      }
      case NodeKind::Load:
        return load(e.as<Load>());
      case NodeKind::Cast: {
        const Cast* op = e.as<Cast>();
        if (style_.cuda) {
          return {fmt::format("static_cast<{}>({})", cuda_type_name(op->type), print(op->value).s),
                  kAtom};
        }
        return {fmt::format("{}({})", cuda_type_name(op->type), print(op->value).s), kAtom};
      }
      case NodeKind::Call: {
        const Call* op = e.as<Call>();
        if (op->name == kAddressOf) {
          const Load* l = op->args[0].as<Load>();
          return {fmt::format("&{}[{}]", l->buffer->name, print(l->index).s), kUnary};
        }
        std::string args;
        for (size_t i = 0; i < op->args.size(); ++i) {
          if (i) args += ", ";
          args += print(op->args[i]).s;
        }
        return {fmt::format("{}({})", op->name, args), kAtom};
      }
      default:
        break;
    }
    throw IRError(fmt::format("expr_text: not an expression node: {}", node_kind_name(e.kind())));
  }

 private:
  static std::string wrap(const Text& t, int min_prec) {
    return t.prec < min_prec ? "(" + t.s + ")" : t.s;
  }

  template <typename Op>
  Text binary(const Op* op, const char* sym, int prec) {
    // Left-associative: the right operand needs parentheses at equal precedence.
    return {fmt::format("{} {} {}", wrap(print(op->a), prec), sym, wrap(print(op->b), prec + 1)),
            prec};
  }

  template <typename Op>
  Text call2(const Op* op, const char* name) {
    return {fmt::format("{}({}, {})", name, print(op->a).s, print(op->b).s), kAtom};
  }

  Text division(const Expr& a, const Expr& b, const char* sym, const char* helper) {
    bool plain = !a.type().is_int() || !style_.cuda ||
                 (style_.non_negative && style_.non_negative(a) && style_.non_negative(b));
    if (plain) {
      return {fmt::format("{} {} {}", wrap(print(a), kMultiplicative), sym,
                          wrap(print(b), kMultiplicative + 1)),
              kMultiplicative};
    }
    style_.used_floor_helpers = true;
    return {fmt::format("{}({}, {})", helper, print(a).s, print(b).s), kAtom};
  }

  Text load(const Load* op) {
    std::string index = print(op->index).s;
    if (op->lanes() == 1) return {fmt::format("{}[{}]", op->buffer->name, index), kAtom};
    if (style_.cuda) {
      return {fmt::format("*reinterpret_cast<const {}*>(&{}[{}])", cuda_type_name(op->type),
                          op->buffer->name, index),
              kUnary};
    }
    return {fmt::format("{}[{}]x{}", op->buffer->name, index, op->lanes()), kAtom};
  }

  const ExprTextStyle& style_;
};

}  // namespace

std::string float_literal(double value, Type t) {
  std::string s = fmt::format("{}", value);
  if (std::isfinite(value) && s.find_first_of(".e") == std::string::npos) s += ".0";
  if (t.dtype == DType::Float32) s += "f";
  return s;
}

std::string expr_text(const Expr& e, const ExprTextStyle& style) {
  Printer p(style);
  return p.print(e).s;
}

}  // namespace cutune::ir
