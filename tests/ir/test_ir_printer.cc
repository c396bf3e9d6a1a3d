#include "src/ir/ir_printer.h"

#include <catch2/catch.hpp>

#include "tests/ir/ir_test_util.h"

using namespace cutune::ir;
using cutune::test::global_f32;
using cutune::test::v;

namespace {

#define CHECK_TEXT(ir, expected)         \
  do {                                   \
    std::string actual_ = to_string(ir); \
    INFO("actual:\n" << actual_);        \
    INFO("expected:\n" << (expected));   \
    CHECK(actual_ == (expected));        \
  } while (0)

}  // namespace

TEST_CASE("leaves print as C literals and names", "[printer]") {
  CHECK_TEXT(i32(42), "42");
  CHECK_TEXT(i32(-3), "-3");
  CHECK_TEXT(IntImm::make(Type::i64(), 5), "5LL");
  CHECK_TEXT(IntImm::make(Type::boolean(), 1), "true");
  CHECK_TEXT(IntImm::make(Type::boolean(), 0), "false");
  CHECK_TEXT(f32(0.0), "0.0f");
  CHECK_TEXT(f32(1.5), "1.5f");
  CHECK_TEXT(f32(-2.0), "-2.0f");
  CHECK_TEXT(v("tx"), "tx");
}

TEST_CASE("binary operators get the fewest parentheses C precedence allows", "[printer]") {
  Expr a = v("a"), b = v("b"), c = v("c"), d = v("d");
  CHECK_TEXT(a + b * c, "a + b * c");
  CHECK_TEXT((a + b) * c, "(a + b) * c");
  CHECK_TEXT(a - b - c, "a - b - c");
  CHECK_TEXT(a - (b - c), "a - (b - c)");
  CHECK_TEXT(a - (b + c), "a - (b + c)");
  CHECK_TEXT(a + (b + c), "a + (b + c)");  // printed as built, not reassociated
  CHECK_TEXT(a * b / c, "a * b / c");
  CHECK_TEXT(a * (b / c), "a * (b / c)");
  CHECK_TEXT(a / b % c, "a / b % c");
  CHECK_TEXT(a % (b * c), "a % (b * c)");
  CHECK_TEXT(a + -1, "a + -1");
  CHECK_TEXT(a * 4 + b < c * 2, "a * 4 + b < c * 2");
  CHECK_TEXT(eq(a < b, c < d), "a < b == c < d");
  CHECK_TEXT((a < b && c < d) || eq(a, d), "a < b && c < d || a == d");
  CHECK_TEXT(a < b && (c < d || eq(a, d)), "a < b && (c < d || a == d)");
  CHECK_TEXT(!(a < b), "!(a < b)");
  CHECK_TEXT(!(a < b && c < d), "!(a < b && c < d)");
  CHECK_TEXT(!!(a < b), "!!(a < b)");
}

TEST_CASE("calls, min, max, select and casts", "[printer]") {
  Expr a = v("a"), b = v("b");
  Expr x = Var::make(Type::f32(), "x");
  CHECK_TEXT(min(a, b + 1), "min(a, b + 1)");
  CHECK_TEXT(max(a * 2, b), "max(a * 2, b)");
  CHECK_TEXT(select(a < b, a + 1, b), "a < b ? a + 1 : b");
  CHECK_TEXT(select(a < b, a, select(eq(a, b), i32(0), b)), "a < b ? a : a == b ? 0 : b");
  CHECK_TEXT(select(a < b, a, b) + 1, "(a < b ? a : b) + 1");
  CHECK_TEXT(cast(Type::f32(), a + b), "float(a + b)");
  CHECK_TEXT(Call::make(Type::f32(), "fmaf", {x, x, f32(1.0)}), "fmaf(x, x, 1.0f)");
  CHECK_TEXT(Call::make(Type::f32(), "expf", {x * f32(0.5)}), "expf(x * 0.5f)");
}

TEST_CASE("loads show their lanes", "[printer]") {
  Buffer a = global_f32("A", 64, true);
  Expr i = v("i");
  CHECK_TEXT(Load::make(a, i * 4 + 1), "A[i * 4 + 1]");
  CHECK_TEXT(Load::make(a, i * 4, 4), "A[i * 4]x4");
  CHECK_TEXT(Load::make(a, i) * f32(2.0), "A[i] * 2.0f");
}

TEST_CASE("a small program prints exactly", "[printer]") {
  Buffer a = global_f32("A", 64, true);
  Buffer c = global_f32("C", 64);
  Buffer s = Buffer::make("S", Type::f32(), MemoryScope::shared, 32);
  Buffer r = Buffer::make("R", Type::f32(), MemoryScope::local, 4);
  Expr i = v("i"), k = v("k"), t = v("t");
  Stmt body = Block::make({
      Store::make(s, i * 8, Load::make(a, i * 8, 4)),
      Sync::make(),
      LetStmt::make("t", i * 2,
                    IfThenElse::make(t < 4, Store::make(c, t, Load::make(s, i)),
                                     Store::make(c, t, f32(0.0)))),
      For::make("k", v("k0"), 4, ForKind::unrolled, Store::make(r, k - v("k0"), Load::make(s, k))),
      IfThenElse::make(i < 1, Evaluate::make(Call::make(Type::i32(), "trap", {}))),
  });
  Stmt prog = For::make("i", 0, 4, ForKind::serial, Allocate::make(s, Allocate::make(r, body)));
  CHECK_TEXT(prog,
             "for i in [0, 4) serial {\n"
             "  allocate S: float[32] shared\n"
             "  allocate R: float[4] local\n"
             "  S[i * 8]x4 = A[i * 8]x4\n"
             "  sync\n"
             "  let t = i * 2\n"
             "  if (t < 4) {\n"
             "    C[t] = S[i]\n"
             "  } else {\n"
             "    C[t] = 0.0f\n"
             "  }\n"
             "  for k in [k0, k0 + 4) unrolled {\n"
             "    R[k - k0] = S[k]\n"
             "  }\n"
             "  if (i < 1) {\n"
             "    trap()\n"
             "  }\n"
             "}\n");
}

TEST_CASE("a kernel prints its parameters and bound loops", "[printer]") {
  Buffer x = global_f32("X", 256, true);
  Buffer y = global_f32("Y", 256);
  Expr n = v("n"), tx = v("tx"), bx = v("bx");
  Expr alpha = Var::make(Type::f32(), "alpha");
  Expr idx = bx * 128 + tx;
  Stmt body = For::make(
      "bx", 0, 2, ForKind::block_x,
      For::make(
          "tx", 0, 128, ForKind::thread_x,
          IfThenElse::make(idx < n,
                           Store::make(y, idx, Load::make(x, idx) * alpha + Load::make(y, idx)))));
  Kernel k{"axpy", {y, x}, {n, alpha}, body};
  CHECK_TEXT(k,
             "kernel axpy(Y: float[256], const X: float[256], n: int, alpha: float) {\n"
             "  for bx in [0, 2) blockIdx.x {\n"
             "    for tx in [0, 128) threadIdx.x {\n"
             "      if (bx * 128 + tx < n) {\n"
             "        Y[bx * 128 + tx] = X[bx * 128 + tx] * alpha + Y[bx * 128 + tx]\n"
             "      }\n"
             "    }\n"
             "  }\n"
             "}\n");
}
