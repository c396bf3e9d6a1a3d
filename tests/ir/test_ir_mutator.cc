#include "src/ir/ir_mutator.h"

#include <catch2/catch.hpp>

#include "tests/ir/ir_test_util.h"

using namespace cutune::ir;
using cutune::test::global_f32;
using cutune::test::v;

namespace {

// Renames one variable; everything else keeps the default (rebuild only on change).
class Rename : public IRMutator {
 public:
  Rename(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  using IRMutator::visit_node;
  Expr visit_node(const Var* op, const Expr& self) override {
    return op->name == from_ ? Var::make(op->type, to_) : self;
  }

 private:
  std::string from_, to_;
};

Stmt sample_program() {
  Buffer a = global_f32("A", 256, true);
  Buffer c = global_f32("C", 256);
  Buffer s = Buffer::make("S", Type::f32(), MemoryScope::shared, 64);
  Expr i = v("i"), j = v("j"), n = v("n");
  return For::make(
      "i", 0, 4, ForKind::serial,
      Allocate::make(
          s,
          Block::make({
              Store::make(s, i * 16, Load::make(a, i * 16, 4)),
              Sync::make(),
              LetStmt::make("t", max(i, n),
                            For::make("j", 0, 16, ForKind::unrolled,
                                      IfThenElse::make(j < v("t"),
                                                       Store::make(c, i * 16 + j, Load::make(s, j)),
                                                       Store::make(c, j, f32(0.0))))),
              Evaluate::make(Call::make(Type::f32(), "expf", {cast(Type::f32(), n), f32(1.0)})),
          })));
}

}  // namespace

TEST_CASE("a mutator that changes nothing returns the same tree", "[mutator]") {
  Stmt prog = sample_program();
  IRMutator identity;
  CHECK(identity.mutate(prog).same_as(prog));
  Rename absent("zz", "yy");
  CHECK(absent.mutate(prog).same_as(prog));
}

TEST_CASE("a mutator rebuilds only the path to what changed", "[mutator]") {
  Buffer c = global_f32("C", 64);
  Stmt keep = Store::make(c, v("i"), f32(1.0));
  Stmt change = Store::make(c, v("j"), f32(2.0));
  Stmt prog = For::make("i", 0, 8, ForKind::serial, Block::make({keep, change, Sync::make()}));
  Rename r("j", "k");
  Stmt out = r.mutate(prog);
  CHECK_FALSE(out.same_as(prog));
  const Block* b = out.as<For>()->body.as<Block>();
  REQUIRE(b != nullptr);
  CHECK(b->stmts[0].same_as(keep));
  CHECK(b->stmts[2].same_as(prog.as<For>()->body.as<Block>()->stmts[2]));
  Stmt expected = For::make("i", 0, 8, ForKind::serial,
                            Block::make({keep, Store::make(c, v("k"), f32(2.0)), Sync::make()}));
  CHECK_IR(prog, out, expected);
}

TEST_CASE("substitute replaces a variable everywhere it appears", "[mutator]") {
  Expr i = v("i"), n = v("n");
  Expr e = select(i < n, i * 4 + 1, min(i, n));
  CHECK_IR(e, substitute(e, "i", i32(3)), select(i32(3) < n, i32(3) * 4 + 1, min(i32(3), n)));
  CHECK(substitute(e, "m", i32(3)).same_as(e));
  Stmt prog = sample_program();
  Stmt renamed = substitute(prog, "n", v("m"));
  CHECK_FALSE(renamed.same_as(prog));
  CHECK(equal(substitute(renamed, "m", v("n")), prog));
}
