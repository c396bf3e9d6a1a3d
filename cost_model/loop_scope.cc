#include "cost_model/loop_scope.h"

#include <algorithm>

#include "src/ir/ir_visitor.h"
#include "src/ir/tma_intrinsics.h"

namespace cutune::cost_model {

namespace {

using namespace ir;

class Dependencies : public IRVisitor {
 public:
  explicit Dependencies(const LoopScope& scope) : scope_(scope) {}
  uint64_t mask = 0;

  using IRVisitor::visit_node;
  void visit_node(const Var* op) override {
    if (int f = scope_.frame_of(op->name); f >= 0) {
      if (f < 64) mask |= uint64_t{1} << f;
    } else if (const LetBinding* let = scope_.let_of(op->name)) {
      mask |= let->deps;
    }
  }
  void visit_node(const Load*) override {}
  void visit_node(const Call*) override {}

 private:
  const LoopScope& scope_;
};

// The odds of a comparison of integers, as the difference x = a - b spread uniformly over
// its range.
template <typename Op>
double comparison(const Op* op, const LoopScope& scope) {
  if (!op->a.type().is_int()) return 1.0;
  Interval a = scope.range(op->a), b = scope.range(op->b);
  if (!a.is_bounded() || !b.is_bounded()) return 1.0;
  double lo = double(*a.lo) - double(*b.hi), hi = double(*a.hi) - double(*b.lo), n = hi - lo + 1;
  auto below = [&](double t) { return std::clamp((t - lo) / n, 0.0, 1.0); };  // P(x < t)
  switch (Op::kKind) {
    case NodeKind::LT:
      return below(0);
    case NodeKind::LE:
      return below(1);
    case NodeKind::GT:
      return 1.0 - below(1);
    case NodeKind::GE:
      return 1.0 - below(0);
    case NodeKind::EQ:
      return (lo <= 0 && hi >= 0) ? 1.0 / n : 0.0;
    case NodeKind::NE:
      return (lo <= 0 && hi >= 0) ? 1.0 - 1.0 / n : 1.0;
    default:
      return 1.0;
  }
}

}  // namespace

int LoopScope::frame_of(const std::string& name) const {
  for (size_t f = frames.size(); f-- > 0;) {
    if (*frames[f].name == name) return int(f);
  }
  return -1;
}

const LetBinding* LoopScope::let_of(const std::string& name) const {
  for (size_t l = lets.size(); l-- > 0;) {
    if (*lets[l].name == name) return &lets[l];
  }
  return nullptr;
}

ir::Interval LoopScope::of(const std::string& name) const {
  if (int f = frame_of(name); f >= 0) {
    const LoopFrame& fr = frames[size_t(f)];
    return {fr.min, fr.min + fr.extent - 1};
  }
  if (const LetBinding* let = let_of(name)) return let->range;
  return Interval::everything();
}

Extents LoopScope::extents() const {
  if (frames.empty()) return {};
  const LoopFrame& f = frames.back();
  return {f.serial, f.threads, f.blocks};
}

Extents LoopScope::extents(uint64_t mask) const {
  Extents x;
  for (size_t f = 0; f < frames.size(); ++f) {
    if (f < 64 && !(mask >> f & 1)) continue;
    const LoopFrame& fr = frames[f];
    double e = double(fr.extent);
    if (is_thread_binding(fr.kind)) {
      x.threads *= e;
    } else if (is_block_binding(fr.kind)) {
      x.blocks *= e;
    } else {
      x.serial *= e;
    }
  }
  return x;
}

uint64_t deps_of(const Expr& e, const LoopScope& scope) {
  Dependencies d(scope);
  d.visit(e);
  return d.mask;
}

double probability(const Expr& cond, const LoopScope& scope) {
  switch (cond.kind()) {
    case NodeKind::IntImm:
      return cond.as<IntImm>()->value != 0;
    case NodeKind::Not:
      return 1.0 - probability(cond.as<Not>()->a, scope);
    case NodeKind::Call:
      return cond.as<Call>()->name == ir::kElectOne ? 1.0 / 32 : 1.0;  // one lane of the warp
    case NodeKind::And:
      return probability(cond.as<And>()->a, scope) * probability(cond.as<And>()->b, scope);
    case NodeKind::Or: {
      double p = probability(cond.as<Or>()->a, scope), q = probability(cond.as<Or>()->b, scope);
      return p + q - p * q;
    }
    case NodeKind::EQ:
      return comparison(cond.as<EQ>(), scope);
    case NodeKind::NE:
      return comparison(cond.as<NE>(), scope);
    case NodeKind::LT:
      return comparison(cond.as<LT>(), scope);
    case NodeKind::LE:
      return comparison(cond.as<LE>(), scope);
    case NodeKind::GT:
      return comparison(cond.as<GT>(), scope);
    case NodeKind::GE:
      return comparison(cond.as<GE>(), scope);
    default:
      return 1.0;
  }
}

}  // namespace cutune::cost_model
