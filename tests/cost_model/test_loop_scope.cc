#include "cost_model/loop_scope.h"

#include <array>
#include <string>

#include <catch2/catch.hpp>

#include "cost_model/index_program.h"
#include "src/ir/ir_operators.h"

using namespace cutune::cost_model;
using namespace cutune::ir;

namespace {

// tx over [0, 32) inside bx over [0, 4), and `col = tx % 8 + cols` with `cols = 8 / group`
// where `group = 2`: a let-bound divisor that is one value.
struct Nest {
  std::string bx = "bx", tx = "tx", group = "group", cols = "cols", col = "col";
  Expr group_value = i32(2);
  Expr cols_value = 8 / int_var("group");
  Expr col_value = int_var("tx") % 8 + int_var("cols");
  LoopScope scope;
  Nest() {
    scope.frames.push_back({&bx, 0, 4, ForKind::block_x, 1, 1, 4});
    scope.frames.push_back({&tx, 0, 32, ForKind::thread_x, 1, 32, 4});
    for (auto [name, value] : {std::pair{&group, &group_value}, std::pair{&cols, &cols_value},
                               std::pair{&col, &col_value}}) {
      scope.lets.push_back({name, value, deps_of(*value, scope), scope.range(*value)});
    }
  }
};

}  // namespace

TEST_CASE("a loop scope gives loops' and lets' ranges and dependencies", "[features]") {
  Nest n;
  CHECK(n.scope.frame_of("tx") == 1);
  CHECK(n.scope.frame_of("col") == -1);
  Interval tx = n.scope.range(int_var("tx"));
  CHECK((tx.lo == 0 && tx.hi == 31));
  // The let-bound divisor is known to be 2: cols is 4, col ranges over [4, 11].
  CHECK(n.scope.range(int_var("cols")).is_point());
  Interval col = n.scope.range(int_var("col"));
  CHECK((col.lo == 4 && col.hi == 11));
  CHECK(deps_of(int_var("col") + int_var("bx"), n.scope) == 0b11);
  CHECK(deps_of(int_var("cols"), n.scope) == 0);
  CHECK(deps_of(int_var("n") * 2, n.scope) == 0);  // a kernel parameter
  Extents x = n.scope.extents(0b10);
  CHECK((x.serial == 1 && x.threads == 32 && x.blocks == 1));
}

TEST_CASE("a condition holds for the fraction of its operands' ranges", "[features]") {
  Nest n;
  CHECK(probability(int_var("tx") < 24, n.scope) == 0.75);
  CHECK(probability(!(int_var("tx") < 24), n.scope) == 0.25);
  CHECK(probability(eq(int_var("col"), 4), n.scope) == 1.0 / 8);
  CHECK(probability(int_var("tx") < 16 && int_var("bx") < 2, n.scope) == 0.25);
  CHECK(probability(int_var("n") < 16, n.scope) == 1.0);  // nothing known
}

TEST_CASE("an index program evaluates an index for a warp's lanes", "[features]") {
  Nest n;
  IndexProgram p;
  compile_index(int_var("col") * 3 + int_var("bx") / 2, n.scope, p);
  REQUIRE(p.ok);
  CHECK(p.deps == 0b11);
  std::array<int64_t, kMaxLanes> v{};
  evaluate_lanes(p, 1, kMaxLanes, v.data());  // tx = 0..31, bx = 0
  for (int l = 0; l < kMaxLanes; ++l) CHECK(v[size_t(l)] == (l % 8 + 4) * 3);
  evaluate_lanes(p, 0, 4, v.data());  // bx = 0..3, tx = 0
  CHECK(v[0] == 12);
  CHECK(v[3] == 13);
  // Floor division and modulo, 0 for a zero divisor; a select by lanes.
  compile_index(select(int_var("tx") < 2, (int_var("tx") - 3) / 2, int_var("tx") % 0), n.scope, p);
  evaluate_lanes(p, 1, 3, v.data());
  CHECK(v[0] == -2);
  CHECK(v[1] == -1);
  CHECK(v[2] == 0);
}
