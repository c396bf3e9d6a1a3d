#include "src/ir/simplify.h"

#include <catch2/catch.hpp>

#include "src/ir/ir_mutator.h"
#include "tests/ir/ir_test_util.h"

using namespace cutune::ir;
using cutune::test::global_f32;
using cutune::test::no;
using cutune::test::v;
using cutune::test::yes;

namespace {

// Simplifies `input` under `env` and compares with `expected`, printing all three on failure.
#define CHECK_SIMPLIFIES(input, expected, ...)            \
  do {                                                    \
    auto in_ = (input);                                   \
    auto out_ = simplify(in_ __VA_OPT__(, ) __VA_ARGS__); \
    CHECK_IR(in_, out_, (expected));                      \
  } while (0)

Stmt store(const Buffer& b, Expr index, Expr value) {
  return Store::make(b, std::move(index), std::move(value));
}

}  // namespace

TEST_CASE("integer constants fold", "[simplify]") {
  CHECK_SIMPLIFIES(i32(3) + 4, i32(7));
  CHECK_SIMPLIFIES(i32(2) * 3 - 10, i32(-4));
  CHECK_SIMPLIFIES(i32(7) / 2, i32(3));
  CHECK_SIMPLIFIES(i32(-7) / 2, i32(-4));  // floor division
  CHECK_SIMPLIFIES(i32(-7) % 2, i32(1));   // floor modulo
  CHECK_SIMPLIFIES(min(i32(3), i32(5)), i32(3));
  CHECK_SIMPLIFIES(max(i32(3), i32(5)), i32(5));
  CHECK_SIMPLIFIES(i32(3) < 5, yes());
  CHECK_SIMPLIFIES(eq(i32(3), i32(5)), no());
  CHECK_SIMPLIFIES(!(i32(3) < 5), no());
  CHECK_SIMPLIFIES(cast(Type::f32(), i32(2)), f32(2.0));
}

TEST_CASE("float constants fold, x * 1 and x + 0 vanish", "[simplify]") {
  Expr x = Var::make(Type::f32(), "x");
  CHECK_SIMPLIFIES(f32(1.5) * f32(2.0), f32(3.0));
  CHECK_SIMPLIFIES(f32(1.0) + f32(0.25), f32(1.25));
  CHECK_SIMPLIFIES(x * f32(1.0), x);
  CHECK_SIMPLIFIES(f32(1.0) * x, x);
  CHECK_SIMPLIFIES(x + f32(0.0), x);
  CHECK_SIMPLIFIES(f32(0.0) + x, x);
}

TEST_CASE("integer identities: x * 1, x + 0, x - x, x * 0", "[simplify]") {
  Expr x = v("x"), y = v("y");
  CHECK_SIMPLIFIES(x * 1, x);
  CHECK_SIMPLIFIES(1 * x, x);
  CHECK_SIMPLIFIES(x + 0, x);
  CHECK_SIMPLIFIES(0 + x, x);
  CHECK_SIMPLIFIES(x - x, i32(0));
  CHECK_SIMPLIFIES(x * 0, i32(0));
  CHECK_SIMPLIFIES(x / 1, x);
  CHECK_SIMPLIFIES(x % 1, i32(0));
  CHECK_SIMPLIFIES(x + y - x, y);
}

TEST_CASE("affine terms are collected with the constant last", "[simplify]") {
  Expr x = v("x"), y = v("y");
  CHECK_SIMPLIFIES((x + 3) * 4 + (y + 1) * 2, x * 4 + y * 2 + 14);
  CHECK_SIMPLIFIES(x * 2 + 1 + x * 3 - 4, x * 5 - 3);
  CHECK_SIMPLIFIES(x * 2 - y * 3, x * 2 - y * 3);
  CHECK_SIMPLIFIES(2 - x, 0 - x + 2);
}

TEST_CASE("(x * c + y) / c is x + y / c and (x * c + y) % c is y % c", "[simplify]") {
  Expr x = v("x"), y = v("y");
  CHECK_SIMPLIFIES((x * 4 + y) / 4, x + y / 4);
  CHECK_SIMPLIFIES((x * 4 + y) % 4, y % 4);
  CHECK_SIMPLIFIES((x * 8 + y * 4 + 2) / 4, x * 2 + y);
  CHECK_SIMPLIFIES((x * 8 + 6) % 4, i32(2));
  CHECK_SIMPLIFIES((x * 8 + 6) / 4, x * 2 + 1);
  // Division by a non-constant is left alone.
  CHECK_SIMPLIFIES((x * 4 + y) / y, (x * 4 + y) / y);
}

TEST_CASE("y / c is 0 and y % c is y when 0 <= y < c", "[simplify]") {
  Expr x = v("x"), y = v("y");
  BoundsEnv env{{"y", Interval{0, 3}}};
  CHECK_SIMPLIFIES(y / 4, i32(0), env);
  CHECK_SIMPLIFIES(y % 4, y, env);
  CHECK_SIMPLIFIES((x * 4 + y) / 4, x, env);
  CHECK_SIMPLIFIES((x * 4 + y) % 4, y, env);
  // Not proven without the bound, or when the bound reaches c.
  CHECK_SIMPLIFIES(y / 4, y / 4);
  BoundsEnv wide{{"y", Interval{0, 4}}};
  CHECK_SIMPLIFIES(y % 4, y % 4, wide);
  BoundsEnv negative{{"y", Interval{-1, 2}}};
  CHECK_SIMPLIFIES(y / 4, y / 4, negative);
}

TEST_CASE("loop bounds make index arithmetic collapse", "[simplify]") {
  Buffer c = global_f32("C", 64);
  Expr tx = v("tx");
  Stmt input = For::make("tx", 0, 8, ForKind::serial, store(c, tx / 8 * 100 + tx % 8, f32(1.0)));
  Stmt expected = For::make("tx", 0, 8, ForKind::serial, store(c, tx, f32(1.0)));
  CHECK_SIMPLIFIES(input, expected);
}

TEST_CASE("comparisons fold under loop bounds", "[simplify]") {
  Buffer c = global_f32("C", 64);
  Expr i = v("i"), n = v("n");
  auto loop = [&](Expr cond) {
    return For::make("i", 0, 16, ForKind::serial,
                     IfThenElse::make(cond, store(c, i, f32(1.0)), store(c, i, f32(2.0))));
  };
  Stmt then_only = For::make("i", 0, 16, ForKind::serial, store(c, i, f32(1.0)));
  Stmt else_only = For::make("i", 0, 16, ForKind::serial, store(c, i, f32(2.0)));
  CHECK_SIMPLIFIES(loop(i < 16), then_only);
  CHECK_SIMPLIFIES(loop(i <= 15), then_only);
  CHECK_SIMPLIFIES(loop(i >= 0), then_only);
  CHECK_SIMPLIFIES(loop(i * 4 + 3 < 64), then_only);
  CHECK_SIMPLIFIES(loop(i >= 16), else_only);
  CHECK_SIMPLIFIES(loop(i > 15), else_only);
  CHECK_SIMPLIFIES(loop(eq(i, i32(20))), else_only);
  CHECK_SIMPLIFIES(loop(ne(i, i32(-1))), then_only);
  // Undecided: i < 8 depends on i; i < n on n.
  CHECK_SIMPLIFIES(loop(i < 8), loop(i < 8));
  CHECK_SIMPLIFIES(loop(i < n), loop(i < n));
  // And/Or with one side decided.
  CHECK_SIMPLIFIES(loop(i < 16 && i < n), loop(i < n));
  CHECK_SIMPLIFIES(loop(i < 16 || i < n), then_only);
  CHECK_SIMPLIFIES(loop(i >= 16 || i < n), loop(i < n));
}

TEST_CASE("min and max fold where bounds order their operands", "[simplify]") {
  Expr i = v("i");
  BoundsEnv env{{"i", Interval{0, 15}}};
  CHECK_SIMPLIFIES(min(i, i32(16)), i, env);
  CHECK_SIMPLIFIES(max(i, i32(0)), i, env);
  CHECK_SIMPLIFIES(min(i, i32(8)), min(i, i32(8)), env);
}

TEST_CASE("IfThenElse and Select with constant conditions", "[simplify]") {
  Buffer c = global_f32("C", 64);
  Stmt a = store(c, 0, f32(1.0)), b = store(c, 1, f32(2.0));
  CHECK_SIMPLIFIES(IfThenElse::make(i32(1) < 2, a, b), a);
  CHECK_SIMPLIFIES(IfThenElse::make(i32(3) < 2, a, b), b);
  CHECK_SIMPLIFIES(Block::make({a, IfThenElse::make(i32(3) < 2, b)}), a);
  // A false condition without an else leaves nothing.
  Stmt gone = simplify(IfThenElse::make(i32(3) < 2, a));
  CHECK_FALSE(gone.defined());

  Expr x = v("x"), y = v("y");
  CHECK_SIMPLIFIES(select(i32(3) < 2, x, y), y);
  CHECK_SIMPLIFIES(select(i32(1) < 2, x + 0, y), x);
  CHECK_SIMPLIFIES(select(x < y, x, x), x);
  CHECK_SIMPLIFIES(select(x < y, x, y), select(x < y, x, y));
}

TEST_CASE("an if whose then case vanishes becomes an if on the negated condition", "[simplify]") {
  Buffer c = global_f32("C", 64);
  Expr n = v("n");
  Stmt b = store(c, 1, f32(2.0));
  Stmt dead = IfThenElse::make(i32(3) < 2, store(c, 0, f32(1.0)));
  CHECK_SIMPLIFIES(IfThenElse::make(n < 4, dead, b), IfThenElse::make(!(n < 4), b));
}

TEST_CASE("a serial loop of extent 1 is replaced by its body", "[simplify]") {
  Buffer c = global_f32("C", 64);
  Expr i = v("i"), j = v("j");
  CHECK_SIMPLIFIES(For::make("i", 5, 1, ForKind::serial, store(c, i * 2, f32(1.0))),
                   store(c, 10, f32(1.0)));
  CHECK_SIMPLIFIES(For::make("i", 0, 1, ForKind::unrolled,
                             For::make("j", 0, 4, ForKind::serial, store(c, i * 4 + j, f32(1.0)))),
                   For::make("j", 0, 4, ForKind::serial, store(c, j, f32(1.0))));
  // A bound loop of extent 1 is a launch dimension and stays.
  Stmt bound = For::make("bx", 0, 1, ForKind::block_x, store(c, v("bx"), f32(1.0)));
  CHECK_SIMPLIFIES(bound, bound);
  // A loop of extent 0 disappears.
  CHECK_SIMPLIFIES(Block::make({For::make("i", 0, 0, ForKind::serial, store(c, i, f32(1.0))),
                                store(c, 3, f32(1.0))}),
                   store(c, 3, f32(1.0)));
}

TEST_CASE("let-bound values carry their bounds", "[simplify]") {
  Buffer c = global_f32("C", 64);
  Expr t = v("t");
  Stmt input = For::make("tx", 0, 32, ForKind::thread_x,
                         LetStmt::make("t", v("tx") % 8, store(c, t / 8 + t, f32(1.0))));
  Stmt expected = For::make("tx", 0, 32, ForKind::thread_x,
                            LetStmt::make("t", v("tx") % 8, store(c, t, f32(1.0))));
  CHECK_SIMPLIFIES(input, expected);
}

TEST_CASE("simplifying simplified IR keeps every node shared", "[simplify]") {
  Buffer c = global_f32("C", 1024);
  Buffer a = global_f32("A", 1024, true);
  Expr i = v("i"), j = v("j"), n = v("n");
  Stmt body = Block::make({store(c, i * 32 + j, Load::make(a, i * 32 + j) * f32(2.0)),
                           IfThenElse::make(i * 32 + j < n, store(c, (j + n) / 4, f32(0.0))),
                           store(c, select(i < n, i, j), max(Load::make(a, j), f32(0.0)))});
  Stmt input = For::make("i", 0, 32, ForKind::serial, For::make("j", 0, 32, ForKind::serial, body));
  Stmt once = simplify(input);
  Stmt twice = simplify(once);
  INFO("input:\n"
       << to_string(input) << "once:\n"
       << to_string(once) << "twice:\n"
       << to_string(twice));
  CHECK(equal(once, input));
  CHECK(once.same_as(input));
  CHECK(twice.same_as(once));
}

TEST_CASE("a change deep in a tree rebuilds only its path", "[simplify]") {
  Buffer c = global_f32("C", 64);
  Stmt untouched = store(c, v("i"), f32(1.0));
  Stmt changed = store(c, v("i") + 0, f32(2.0));
  Stmt input = For::make("i", 0, 16, ForKind::serial, Block::make({untouched, changed}));
  Stmt out = simplify(input);
  const Block* block = out.as<For>()->body.as<Block>();
  REQUIRE(block != nullptr);
  CHECK_FALSE(out.same_as(input));
  CHECK(block->stmts[0].same_as(untouched));
  CHECK_IR(changed, block->stmts[1], store(c, v("i"), f32(2.0)));
}
