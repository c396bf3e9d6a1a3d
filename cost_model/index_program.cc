#include "cost_model/index_program.h"

#include <algorithm>

#include "src/base/int_math.h"
#include "src/ir/ir_visitor.h"

namespace cutune::cost_model {

namespace {

using namespace ir;

constexpr int kStackDepth = 64;

// Emits postfix code. `depth_` is the evaluation stack's height once the node being visited
// has pushed its value: an operand is compiled at the height it will occupy.
class Compiler : public IRVisitor {
 public:
  Compiler(const LoopScope& scope, IndexProgram& p) : scope_(scope), p_(p) {}

  void compile(const Expr& e, int depth) {
    if (depth > kStackDepth) {
      p_.ok = false;
      return;
    }
    const int saved = depth_;
    depth_ = depth;
    visit(e);
    depth_ = saved;
  }

  using IRVisitor::visit_node;
  void visit_node(const IntImm* op) override { emit(NodeKind::IntImm, op->value); }
  void visit_node(const FloatImm*) override { emit(NodeKind::IntImm, 0); }
  void visit_node(const Var* op) override {
    if (int f = scope_.frame_of(op->name); f >= 0) {
      emit(NodeKind::Var, f);
      if (f < 64) p_.deps |= uint64_t{1} << f;
    } else if (const LetBinding* let = scope_.let_of(op->name)) {
      compile(*let->value, depth_);
    } else {
      emit(NodeKind::IntImm, 0);
    }
  }
  void visit_node(const Cast* op) override { compile(op->value, depth_); }
  void visit_node(const Not* op) override {
    compile(op->a, depth_);
    emit(NodeKind::Not);
  }
  void visit_node(const Select* op) override {
    compile(op->condition, depth_);
    compile(op->true_value, depth_ + 1);
    compile(op->false_value, depth_ + 2);
    emit(NodeKind::Select);
  }
  void visit_node(const Load*) override { emit(NodeKind::IntImm, 0); }
  void visit_node(const Call*) override { emit(NodeKind::IntImm, 0); }
#define CUTUNE_COMPILE_BINARY(name) \
  void visit_node(const name* op) override { binary(op); }
  CUTUNE_IR_BINARY_NODES(CUTUNE_COMPILE_BINARY)
#undef CUTUNE_COMPILE_BINARY

 private:
  template <typename Op>
  void binary(const Op* op) {
    if (!(op->type.is_int() || op->type.is_bool())) return emit(NodeKind::IntImm, 0);
    compile(op->a, depth_);
    compile(op->b, depth_ + 1);
    emit(Op::kKind);
  }

  void emit(NodeKind op, int64_t value = 0) { p_.code.push_back({op, value}); }

  const LoopScope& scope_;
  IndexProgram& p_;
  int depth_ = 1;
};

// The IR's division and remainder, 0 for a zero divisor (a bound the analysis cannot use).
int64_t div_or_zero(int64_t a, int64_t b) { return b == 0 ? 0 : floor_div(a, b); }
int64_t mod_or_zero(int64_t a, int64_t b) { return b == 0 ? 0 : floor_mod(a, b); }

inline int64_t apply(NodeKind op, int64_t a, int64_t b) {
  switch (op) {
    case NodeKind::Add:
      return a + b;
    case NodeKind::Sub:
      return a - b;
    case NodeKind::Mul:
      return a * b;
    case NodeKind::Div:
      return div_or_zero(a, b);
    case NodeKind::Mod:
      return mod_or_zero(a, b);
    case NodeKind::Min:
      return std::min(a, b);
    case NodeKind::Max:
      return std::max(a, b);
    case NodeKind::EQ:
      return a == b;
    case NodeKind::NE:
      return a != b;
    case NodeKind::LT:
      return a < b;
    case NodeKind::LE:
      return a <= b;
    case NodeKind::GT:
      return a > b;
    case NodeKind::GE:
      return a >= b;
    case NodeKind::And:
      return a != 0 && b != 0;
    case NodeKind::Or:
      return a != 0 || b != 0;
    default:
      return 0;
  }
}

// apply() lane by lane, with the operation chosen once: the common ones become loops the
// compiler vectorises.
void apply_lanes(NodeKind op, int64_t* a, const int64_t* b, int lanes) {
  switch (op) {
    case NodeKind::Add:
      for (int l = 0; l < lanes; ++l) a[l] += b[l];
      return;
    case NodeKind::Sub:
      for (int l = 0; l < lanes; ++l) a[l] -= b[l];
      return;
    case NodeKind::Mul:
      for (int l = 0; l < lanes; ++l) a[l] *= b[l];
      return;
    case NodeKind::Min:
      for (int l = 0; l < lanes; ++l) a[l] = std::min(a[l], b[l]);
      return;
    case NodeKind::Max:
      for (int l = 0; l < lanes; ++l) a[l] = std::max(a[l], b[l]);
      return;
    default:
      for (int l = 0; l < lanes; ++l) a[l] = apply(op, a[l], b[l]);
      return;
  }
}

}  // namespace

void compile_index(const Expr& e, const LoopScope& scope, IndexProgram& p) {
  p.code.clear();
  p.deps = 0;
  p.ok = true;
  Compiler(scope, p).compile(e, 1);
}

// One dispatch per instruction for the whole warp, and a scalar step while an operand is the
// same on every lane.
void evaluate_lanes(const IndexProgram& p, int sweep, int lanes, int64_t* out) {
  struct Slot {
    bool uniform;
    int64_t v[kMaxLanes];
  };
  Slot stack[kStackDepth + 2];
  int sp = 0;
  auto widen = [&](Slot& s) {
    if (!s.uniform) return;
    std::fill(s.v + 1, s.v + lanes, s.v[0]);
    s.uniform = false;
  };
  for (const IndexInstr& in : p.code) {
    switch (in.op) {
      case NodeKind::IntImm:
        stack[sp].uniform = true;
        stack[sp++].v[0] = in.value;
        break;
      case NodeKind::Var:
        if (in.value == sweep) {
          stack[sp].uniform = false;
          for (int l = 0; l < lanes; ++l) stack[sp].v[l] = l;
        } else {
          stack[sp].uniform = true;
          stack[sp].v[0] = 0;
        }
        ++sp;
        break;
      case NodeKind::Not: {
        Slot& a = stack[sp - 1];
        for (int l = 0; l < (a.uniform ? 1 : lanes); ++l) a.v[l] = a.v[l] == 0;
        break;
      }
      case NodeKind::Select: {
        sp -= 2;
        Slot &c = stack[sp - 1], &t = stack[sp], &f = stack[sp + 1];
        if (c.uniform) {
          c = c.v[0] != 0 ? t : f;
          break;
        }
        widen(t);
        widen(f);
        for (int l = 0; l < lanes; ++l) c.v[l] = c.v[l] != 0 ? t.v[l] : f.v[l];
        break;
      }
      default: {
        --sp;
        Slot &a = stack[sp - 1], &b = stack[sp];
        if (a.uniform && b.uniform) {
          a.v[0] = apply(in.op, a.v[0], b.v[0]);
          break;
        }
        widen(a);
        widen(b);
        apply_lanes(in.op, a.v, b.v, lanes);
        break;
      }
    }
  }
  if (sp != 1) {
    std::fill(out, out + lanes, 0);
    return;
  }
  widen(stack[0]);
  std::copy(stack[0].v, stack[0].v + lanes, out);
}

}  // namespace cutune::cost_model
