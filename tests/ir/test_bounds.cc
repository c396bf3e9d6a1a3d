#include "src/ir/bounds.h"

#include <catch2/catch.hpp>

#include "tests/ir/ir_test_util.h"

using namespace cutune::ir;
using cutune::test::v;

TEST_CASE("bounds_of and provably_non_negative", "[bounds]") {
  Expr x = v("x"), y = v("y");
  BoundsEnv env{{"x", Interval{0, 7}}, {"y", Interval{-2, 3}}};
  Interval b = bounds_of(x * 4 + y, env);
  CHECK(b.lo == -2);
  CHECK(b.hi == 31);
  CHECK(bounds_of(x % 4, env).hi == 3);
  CHECK(bounds_of(x / 2, env).hi == 3);
  CHECK(bounds_of(y / 2, env).lo == -1);
  CHECK(provably_non_negative(x * 4 + 1, env));
  CHECK_FALSE(provably_non_negative(x + y, env));
  CHECK_FALSE(provably_non_negative(v("z"), env));
  CHECK_FALSE(bounds_of(v("z") * 2, env).lo.has_value());
}

TEST_CASE("bounds_of keeps one-sided bounds through min, max and select", "[bounds]") {
  Expr x = v("x"), z = v("z");
  BoundsEnv env{{"x", Interval{0, 7}}};
  Interval m = bounds_of(min(z, x), env);
  CHECK_FALSE(m.lo.has_value());
  CHECK(m.hi == 7);
  Interval clamped = bounds_of(max(min(z, 5), 0), env);
  CHECK(clamped.lo == 0);
  CHECK(clamped.hi == 5);
  Interval s = bounds_of(select(x < 3, x, x + 10), env);
  CHECK(s.lo == 0);
  CHECK(s.hi == 17);
  // Division and modulo only by a positive constant.
  CHECK_FALSE(bounds_of(x / z, env).hi.has_value());
  CHECK(bounds_of(z % 8, env).hi == 7);
  CHECK_FALSE(bounds_of(x % 0, env).hi.has_value());
}

namespace {

// Ranges from a callback, as a pass with its own scope (the cost model's loop nest) gives them.
class Counted : public VarBounds {
 public:
  Interval of(const std::string& name) const override {
    ++lookups;
    return name == "i" ? Interval{2, 5} : Interval::everything();
  }
  mutable int lookups = 0;
};

}  // namespace

TEST_CASE("bounds_of asks a VarBounds for the variables it meets", "[bounds]") {
  Counted vars;
  Interval b = bounds_of(v("i") * 3 - v("i"), vars);
  CHECK(b.lo == 6 - 5);
  CHECK(b.hi == 15 - 2);
  CHECK(vars.lookups == 2);
  CHECK_FALSE(bounds_of(v("j") + 1, vars).is_bounded());
  CHECK(bounds_of(i32(4), vars).is_point());
}

TEST_CASE("a divisor known to be one value divides only where the query allows it", "[bounds]") {
  Expr x = v("x"), n = v("n");
  BoundsEnv env{{"x", Interval{0, 31}}, {"n", Interval{4, 4}}};
  CHECK_FALSE(bounds_of(x / n, env).is_bounded());
  CHECK_FALSE(bounds_of(x % n, env).is_bounded());
  class Env : public VarBounds {
   public:
    explicit Env(const BoundsEnv& env) : env_(env) {}
    Interval of(const std::string& name) const override { return env_.at(name); }

   private:
    const BoundsEnv& env_;
  } vars(env);
  Interval q = bounds_of(x / n, vars, Divisors::single_valued);
  CHECK((q.lo == 0 && q.hi == 7));
  Interval r = bounds_of(x % n, vars, Divisors::single_valued);
  CHECK((r.lo == 0 && r.hi == 3));
}
