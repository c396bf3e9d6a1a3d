#include "src/ir/bounds.h"

#include <algorithm>

#include "src/base/int_math.h"

namespace cutune::ir {

namespace {

using Bound = std::optional<int64_t>;

Bound add_bound(Bound a, Bound b) {
  if (!a || !b) return std::nullopt;
  return *a + *b;
}

class EnvBounds : public VarBounds {
 public:
  explicit EnvBounds(const BoundsEnv& env) : env_(env) {}
  Interval of(const std::string& name) const override {
    auto it = env_.find(name);
    return it == env_.end() ? Interval::everything() : it->second;
  }

 private:
  const BoundsEnv& env_;
};

// The divisor's value where the query knows it exactly.
Bound divisor(const Expr& d, const VarBounds& vars, Divisors divisors) {
  if (auto c = as_const_int(d)) return c;
  if (divisors == Divisors::constant) return std::nullopt;
  Interval i = bounds_of(d, vars, divisors);
  return i.is_point() ? i.lo : std::nullopt;
}

}  // namespace

Interval add(const Interval& a, const Interval& b) {
  return {add_bound(a.lo, b.lo), add_bound(a.hi, b.hi)};
}

Interval scale(const Interval& i, int64_t c) {
  if (c >= 0) {
    return {i.lo ? Bound(*i.lo * c) : std::nullopt, i.hi ? Bound(*i.hi * c) : std::nullopt};
  }
  return {i.hi ? Bound(*i.hi * c) : std::nullopt, i.lo ? Bound(*i.lo * c) : std::nullopt};
}

Interval bounds_of(const Expr& e, const VarBounds& vars, Divisors divisors) {
  if (auto c = as_const_int(e)) return Interval::point(*c);
  if (!e.type().is_int()) return Interval::everything();
  switch (e.kind()) {
    case NodeKind::Var:
      return vars.of(e.as<Var>()->name);
    case NodeKind::Add:
      return add(bounds_of(e.as<Add>()->a, vars, divisors),
                 bounds_of(e.as<Add>()->b, vars, divisors));
    case NodeKind::Sub:
      return add(bounds_of(e.as<Sub>()->a, vars, divisors),
                 scale(bounds_of(e.as<Sub>()->b, vars, divisors), -1));
    case NodeKind::Mul: {
      const Mul* op = e.as<Mul>();
      if (auto c = as_const_int(op->b)) return scale(bounds_of(op->a, vars, divisors), *c);
      if (auto c = as_const_int(op->a)) return scale(bounds_of(op->b, vars, divisors), *c);
      Interval a = bounds_of(op->a, vars, divisors), b = bounds_of(op->b, vars, divisors);
      if (a.is_bounded() && b.is_bounded()) {
        int64_t v[] = {*a.lo * *b.lo, *a.lo * *b.hi, *a.hi * *b.lo, *a.hi * *b.hi};
        return {*std::min_element(v, v + 4), *std::max_element(v, v + 4)};
      }
      return Interval::everything();
    }
    case NodeKind::Div: {
      const Div* op = e.as<Div>();
      Bound c = divisor(op->b, vars, divisors);
      if (!c || *c <= 0) return Interval::everything();
      Interval a = bounds_of(op->a, vars, divisors);
      return {a.lo ? Bound(floor_div(*a.lo, *c)) : std::nullopt,
              a.hi ? Bound(floor_div(*a.hi, *c)) : std::nullopt};
    }
    case NodeKind::Mod: {
      const Mod* op = e.as<Mod>();
      Bound c = divisor(op->b, vars, divisors);
      if (!c || *c <= 0) return Interval::everything();
      Interval a = bounds_of(op->a, vars, divisors);
      if (a.is_bounded() && *a.lo >= 0 && *a.hi < *c) return a;
      return {0, *c - 1};
    }
    case NodeKind::Min: {
      Interval a = bounds_of(e.as<Min>()->a, vars, divisors),
               b = bounds_of(e.as<Min>()->b, vars, divisors);
      Bound lo = (a.lo && b.lo) ? Bound(std::min(*a.lo, *b.lo)) : std::nullopt;
      Bound hi = a.hi ? (b.hi ? Bound(std::min(*a.hi, *b.hi)) : a.hi) : b.hi;
      return {lo, hi};
    }
    case NodeKind::Max: {
      Interval a = bounds_of(e.as<Max>()->a, vars, divisors),
               b = bounds_of(e.as<Max>()->b, vars, divisors);
      Bound lo = a.lo ? (b.lo ? Bound(std::max(*a.lo, *b.lo)) : a.lo) : b.lo;
      Bound hi = (a.hi && b.hi) ? Bound(std::max(*a.hi, *b.hi)) : std::nullopt;
      return {lo, hi};
    }
    case NodeKind::Select: {
      Interval a = bounds_of(e.as<Select>()->true_value, vars, divisors);
      Interval b = bounds_of(e.as<Select>()->false_value, vars, divisors);
      Bound lo = (a.lo && b.lo) ? Bound(std::min(*a.lo, *b.lo)) : std::nullopt;
      Bound hi = (a.hi && b.hi) ? Bound(std::max(*a.hi, *b.hi)) : std::nullopt;
      return {lo, hi};
    }
    case NodeKind::Call:
      // A block's rank in its cluster: at most 16 blocks a cluster (sm_90's non-portable most).
      if (e.as<Call>()->name == "cutune_cluster_ctarank") return {0, 15};
      return Interval::everything();
    default:
      return Interval::everything();
  }
}

Interval bounds_of(const Expr& e, const BoundsEnv& env) { return bounds_of(e, EnvBounds(env)); }

bool provably_non_negative(const Expr& e, const BoundsEnv& env) {
  Interval i = bounds_of(e, env);
  return i.lo && *i.lo >= 0;
}

}  // namespace cutune::ir
