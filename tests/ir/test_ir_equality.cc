#include "src/ir/ir_equality.h"

#include <catch2/catch.hpp>

#include "tests/ir/ir_test_util.h"

using namespace cutune::ir;
using cutune::test::global_f32;
using cutune::test::v;

namespace {

#define CHECK_EQUAL_IR(a, b)                                                         \
  do {                                                                               \
    INFO("left:\n" << cutune::test::show(a) << "right:\n" << cutune::test::show(b)); \
    CHECK(equal((a), (b)));                                                          \
  } while (0)
#define CHECK_DIFFERENT_IR(a, b)                                                     \
  do {                                                                               \
    INFO("left:\n" << cutune::test::show(a) << "right:\n" << cutune::test::show(b)); \
    CHECK_FALSE(equal((a), (b)));                                                    \
  } while (0)

}  // namespace

TEST_CASE("expressions built twice are equal but not the same node", "[equality]") {
  Buffer a = global_f32("A", 64, true);
  auto build = [&] {
    return select(v("i") < 8, Load::make(a, v("i") * 4, 4),
                  Load::make(a, (v("i") + 1) % 16 * 4, 4));
  };
  Expr x = build(), y = build();
  CHECK_FALSE(x.same_as(y));
  CHECK_EQUAL_IR(x, y);
  CHECK_EQUAL_IR(Call::make(Type::f32(), "fmaf", {f32(1.0), f32(2.0), f32(3.0)}),
                 Call::make(Type::f32(), "fmaf", {f32(1.0), f32(2.0), f32(3.0)}));
}

TEST_CASE("expressions differing anywhere are not equal", "[equality]") {
  Expr i = v("i"), j = v("j");
  CHECK_DIFFERENT_IR(i + 1, i + 2);
  CHECK_DIFFERENT_IR(i + 1, j + 1);
  CHECK_DIFFERENT_IR(i + 1, i - 1);
  CHECK_DIFFERENT_IR(i + j, j + i);  // structural, not algebraic
  CHECK_DIFFERENT_IR(i32(1), IntImm::make(Type::i64(), 1));
  CHECK_DIFFERENT_IR(v("x"), Var::make(Type::f32(), "x"));
  CHECK_DIFFERENT_IR(f32(1.0), f32(1.5));
  CHECK_DIFFERENT_IR(i < j, i <= j);
  CHECK_DIFFERENT_IR(min(i, j), max(i, j));
  CHECK_DIFFERENT_IR(Call::make(Type::f32(), "expf", {f32(1.0)}),
                     Call::make(Type::f32(), "logf", {f32(1.0)}));
  CHECK_DIFFERENT_IR(Call::make(Type::f32(), "fmaxf", {f32(1.0)}),
                     Call::make(Type::f32(), "fmaxf", {f32(1.0), f32(1.0)}));
  CHECK_DIFFERENT_IR(cast(Type::f32(), i), cast(Type::f32(), j));
}

TEST_CASE("loads compare their buffers by name, type, scope, size and constness", "[equality]") {
  Buffer a = global_f32("A", 64, true);
  Expr i = v("i");
  CHECK_EQUAL_IR(Load::make(a, i), Load::make(global_f32("A", 64, true), i));
  CHECK_DIFFERENT_IR(Load::make(a, i), Load::make(global_f32("B", 64, true), i));
  CHECK_DIFFERENT_IR(Load::make(a, i), Load::make(global_f32("A", 128, true), i));
  CHECK_DIFFERENT_IR(Load::make(a, i), Load::make(global_f32("A", 64, false), i));
  CHECK_DIFFERENT_IR(Load::make(a, i),
                     Load::make(Buffer::make("A", Type::f32(), MemoryScope::shared, 64), i));
  CHECK_DIFFERENT_IR(Load::make(a, i * 4), Load::make(a, i * 4, 4));
}

TEST_CASE("statements: loops, blocks, ifs, lets, allocations", "[equality]") {
  Buffer c = global_f32("C", 64);
  Buffer s = Buffer::make("S", Type::f32(), MemoryScope::shared, 64);
  Expr i = v("i");
  Stmt st = Store::make(c, i, f32(1.0));
  auto loop = [&](const char* var, ForKind kind, int extent) {
    return For::make(var, 0, extent, kind, Store::make(c, v(var), f32(1.0)));
  };
  CHECK_EQUAL_IR(loop("i", ForKind::serial, 8), loop("i", ForKind::serial, 8));
  CHECK_DIFFERENT_IR(loop("i", ForKind::serial, 8), loop("i", ForKind::unrolled, 8));
  CHECK_DIFFERENT_IR(loop("i", ForKind::serial, 8), loop("i", ForKind::serial, 16));
  CHECK_DIFFERENT_IR(loop("i", ForKind::serial, 8), loop("j", ForKind::serial, 8));
  CHECK_EQUAL_IR(Block::make({st, Sync::make()}), Block::make({st, Sync::make()}));
  CHECK_DIFFERENT_IR(Block::make({st, Sync::make()}), Block::make({Sync::make(), st}));
  CHECK_DIFFERENT_IR(Block::make({st, Sync::make()}), Block::make({st, Sync::make(), st}));
  CHECK_DIFFERENT_IR(IfThenElse::make(i < 4, st), IfThenElse::make(i < 4, st, st));
  CHECK_EQUAL_IR(IfThenElse::make(i < 4, st, Sync::make()),
                 IfThenElse::make(i < 4, st, Sync::make()));
  CHECK_DIFFERENT_IR(LetStmt::make("t", i, st), LetStmt::make("u", i, st));
  CHECK_DIFFERENT_IR(LetStmt::make("t", i, st), LetStmt::make("t", i + 1, st));
  CHECK_EQUAL_IR(Allocate::make(s, st),
                 Allocate::make(Buffer::make("S", Type::f32(), MemoryScope::shared, 64), st));
  CHECK_DIFFERENT_IR(Allocate::make(s, st),
                     Allocate::make(Buffer::make("S", Type::f32(), MemoryScope::local, 64), st));
  CHECK_DIFFERENT_IR(Store::make(c, i, f32(1.0)), Store::make(c, i, f32(2.0)));
  CHECK_DIFFERENT_IR(st, Evaluate::make(f32(1.0)));
  CHECK_DIFFERENT_IR(st, Stmt());
  CHECK_EQUAL_IR(Stmt(), Stmt());
}
