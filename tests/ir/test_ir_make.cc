// make(...) checks the IR's invariants and throws IRError when a template breaks one.

#include "src/ir/ir.h"

#include <catch2/catch.hpp>

#include "tests/ir/ir_test_util.h"

using namespace cutune::ir;
using cutune::test::global_f32;
using cutune::test::v;

namespace {

Stmt nop() { return Store::make(global_f32("C", 64), 0, f32(0.0)); }

}  // namespace

TEST_CASE("bound loops start at 0 and have a positive constant extent", "[make]") {
  CHECK_NOTHROW(For::make("tx", 0, 32, ForKind::thread_x, nop()));
  CHECK_THROWS_AS(For::make("tx", 1, 32, ForKind::thread_x, nop()), IRError);
  CHECK_THROWS_AS(For::make("bx", v("n"), 32, ForKind::block_x, nop()), IRError);
  CHECK_THROWS_AS(For::make("tx", 0, v("n"), ForKind::thread_y, nop()), IRError);
  CHECK_THROWS_AS(For::make("tx", 0, 0, ForKind::thread_z, nop()), IRError);
  CHECK_THROWS_WITH(For::make("ty", 2, 8, ForKind::thread_y, nop()),
                    Catch::Contains("starts at 0") && Catch::Contains("ty"));
  // Serial loops may start anywhere and run for a symbolic extent.
  CHECK_NOTHROW(For::make("k", v("k0"), v("n"), ForKind::serial, nop()));
  // Unrolled and vectorized loops need a constant extent.
  CHECK_THROWS_AS(For::make("k", 0, v("n"), ForKind::unrolled, nop()), IRError);
  CHECK_THROWS_AS(For::make("k", 0, v("n"), ForKind::vectorized, nop()), IRError);
  CHECK_THROWS_AS(For::make("k", f32(0.0), 4, ForKind::serial, nop()), IRError);
  CHECK_THROWS_AS(For::make("k", 0, 4, ForKind::serial, Stmt()), IRError);
  CHECK_THROWS_AS(For::make("", 0, 4, ForKind::serial, nop()), IRError);
}

TEST_CASE("operand types must agree", "[make]") {
  Expr i = v("i");
  Expr x = Var::make(Type::f32(), "x");
  Expr b = i < 4;
  CHECK_THROWS_AS(i + x, IRError);
  CHECK_THROWS_AS(i * IntImm::make(Type::i64(), 2), IRError);
  CHECK_THROWS_AS(i < x, IRError);
  CHECK_THROWS_AS(b + b, IRError);   // arithmetic on Bool
  CHECK_THROWS_AS(i && i, IRError);  // logic on Int32
  CHECK_THROWS_AS(!i, IRError);
  CHECK_THROWS_AS(select(i, i, i), IRError);  // condition not Bool
  CHECK_THROWS_AS(select(b, i, x), IRError);  // branches differ
  CHECK_THROWS_AS(FloatImm::make(Type::i32(), 1.0), IRError);
  CHECK_THROWS_AS(IntImm::make(Type::f32(), 1), IRError);
  CHECK_THROWS_AS(IntImm::make(Type::i32(), int64_t{1} << 31), IRError);
  CHECK_THROWS_AS(cast(Type::f32().with_lanes(4), i), IRError);
  CHECK_THROWS_AS(IfThenElse::make(i, nop()), IRError);
  CHECK(b.type() == Type::boolean());
  CHECK((i + 1).type() == Type::i32());
}

TEST_CASE("loads and stores: index type, lanes, value type", "[make]") {
  Buffer a = global_f32("A", 64, true);
  Buffer c = global_f32("C", 64);
  Buffer n = Buffer::make("N", Type::i32(), MemoryScope::global, 64);
  Expr i = v("i");
  CHECK_THROWS_AS(Load::make(a, f32(0.0)), IRError);
  CHECK_THROWS_AS(Load::make(a, IntImm::make(Type::i64(), 0)), IRError);
  CHECK_THROWS_AS(Load::make(a, i, 3), IRError);
  CHECK(Load::make(a, i, 4).type() == Type::f32().with_lanes(4));
  CHECK_THROWS_AS(Store::make(n, i, f32(1.0)), IRError);
  CHECK_THROWS_AS(Store::make(c, i, i), IRError);
  CHECK_THROWS_AS(Store::make(c, f32(0.0), f32(1.0)), IRError);
  CHECK_NOTHROW(Store::make(c, i * 4, Load::make(a, i * 4, 4)));
  // Arithmetic is scalar: a vector value can only be moved.
  CHECK_THROWS_AS(Load::make(a, i, 4) + Load::make(a, i, 4), IRError);
}

TEST_CASE("a store to a read-only buffer is an error", "[make]") {
  Buffer a = global_f32("A", 64, true);
  CHECK_THROWS_AS(Store::make(a, v("i"), f32(1.0)), IRError);
  CHECK_THROWS_WITH(Store::make(a, v("i"), f32(1.0)),
                    Catch::Contains("read-only") && Catch::Contains("A"));
}

TEST_CASE("a constant index outside the buffer is an error", "[make]") {
  Buffer a = global_f32("A", 64, true);
  Buffer c = global_f32("C", 64);
  CHECK_NOTHROW(Load::make(a, 63));
  CHECK_NOTHROW(Load::make(a, 60, 4));
  CHECK_THROWS_AS(Load::make(a, 64), IRError);
  CHECK_THROWS_AS(Load::make(a, -1), IRError);
  CHECK_THROWS_AS(Load::make(a, 62, 4), IRError);  // the vector runs past the end
  CHECK_THROWS_WITH(Load::make(a, 64), Catch::Contains("A[64]"));
  CHECK_THROWS_AS(Store::make(c, 64, f32(1.0)), IRError);
  CHECK_THROWS_AS(Store::make(c, 62, Load::make(a, 0, 4)), IRError);
}

TEST_CASE("buffers, allocations and blocks", "[make]") {
  CHECK_THROWS_AS(Buffer::make("", Type::f32(), MemoryScope::shared, 4), IRError);
  CHECK_THROWS_AS(Buffer::make("S", Type::f32(), MemoryScope::shared, 0), IRError);
  CHECK_THROWS_AS(Buffer::make("S", Type::f32().with_lanes(4), MemoryScope::shared, 4), IRError);
  CHECK_THROWS_AS(Allocate::make(global_f32("G", 4), nop()), IRError);
  CHECK_THROWS_AS(Block::make({}), IRError);
  CHECK_THROWS_AS(Block::make({Stmt(), Stmt()}), IRError);
  // Blocks flatten, drop undefined statements and collapse a single statement.
  Stmt s = nop();
  CHECK(Block::make({Stmt(), s}).same_as(s));
  Stmt nested = Block::make({s, Block::make({Sync::make(), s})});
  REQUIRE(nested.as<Block>() != nullptr);
  CHECK(nested.as<Block>()->stmts.size() == 3);
  CHECK_THROWS_AS(LetStmt::make("t", Load::make(global_f32("A", 8, true), 0, 4), s), IRError);
}

TEST_CASE("a cast to the same type is the value itself", "[make]") {
  Expr i = v("i");
  CHECK(cast(Type::i32(), i).same_as(i));
  CHECK(cast(Type::f32(), i).as<Cast>() != nullptr);
}
