// GEMM configurations run in the CPU emulator and match the CPU reference; a planted tail-guard
// bug is caught by the emulator's bounds check.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "src/lower/lower.h"
#include "src/measure/correctness.h"
#include "src/measure/emulated_check.h"
#include "kernels/template.h"
#include "src/codegen/codegen_cuda.h"
#include "src/ir/ir_mutator.h"
#include "src/ir/ir_printer.h"
#include "src/ir/ir_visitor.h"
#include "tests/kernels/gemm_samples.h"

using namespace cutune;

namespace {

// Runs `count` verifier-passed configurations drawn from a fixed seed; every one must pass.
void emulate_sample(const std::string& layout, std::vector<int64_t> shape, int count,
                    uint64_t seed) {
  auto tmpl = make_template("gemm", shape, layout);
  emu::Emulator emulator;
  std::mt19937_64 rng(seed);
  int ran = 0;
  for (int draws = 0; ran < count && draws < count * 4; ++draws) {
    std::optional<Config> c = tmpl->space().sample_valid(rng);
    REQUIRE(c.has_value());
    EmulatedCheck r = check_in_emulator(*tmpl, *c, ir::TargetLimits{}, emulator);
    if (r.status == "rejected") continue;  // the verifier's call; compile tests cover those
    ++ran;
    INFO(test::describe(*tmpl, *c)
         << "\nstatus " << r.status << ": " << r.message << "\nmax rel error " << r.max_rel_error);
    CHECK(r.passed);
    CHECK(r.max_rel_error < 1e-4);
  }
  CHECK(ran == count);
}

const char* kScalarConfig =
    R"({"knobs":{"block_m":64,"block_n":32,"block_k":8,"thread_m":4,"thread_n":2,"warp_n":4,)"
    R"("frag_m":2,"frag_n":2,"vec_load":1,"smem_pad":0,"double_buffer":0,"unroll_k":0}})";

// The planted bug: in the guard of every store to C, `x < limit` becomes `x <= limit` - the
// classic off-by-one in a tail guard.
class LoosenTailGuard : public ir::IRMutator {
 public:
  explicit LoosenTailGuard(int64_t limit) : limit_(limit) {}
  int loosened = 0;

  using IRMutator::visit_node;
  ir::Stmt visit_node(const ir::IfThenElse* op, const ir::Stmt& self) override {
    if (!stores_to_c(op->then_case)) return IRMutator::visit_node(op, self);
    Loosen loosen(limit_);
    ir::Expr c = loosen.mutate(op->condition);
    loosened += loosen.count;
    return ir::IfThenElse::make(c, op->then_case, op->else_case);
  }

 private:
  struct Loosen : ir::IRMutator {
    explicit Loosen(int64_t l) : limit(l) {}
    int64_t limit;
    int count = 0;
    using IRMutator::visit_node;
    ir::Expr visit_node(const ir::LT* op, const ir::Expr& self) override {
      if (!ir::is_const_int(op->b, limit)) return self;
      ++count;
      return ir::LE::make(op->a, op->b);
    }
  };
  static bool stores_to_c(const ir::Stmt& s) {
    struct Finder : ir::IRVisitor {
      bool found = false;
      using IRVisitor::visit_node;
      void visit_node(const ir::Store* op) override { found = found || op->buffer->name == "C"; }
    } f;
    f.visit(s);
    return f.found;
  }
  int64_t limit_;
};

// Lowers the scalar configuration, plants the bug on the guard against `limit` and runs it.
EmulatedCheck run_with_planted_bug(const std::string& layout, int64_t limit, std::string& ir_text) {
  auto tmpl = make_template("gemm", {127, 255, 63}, layout);
  Config c = tmpl->space().from_json(nlohmann::json::parse(kScalarConfig));
  Lowered l = lower(*tmpl, c, ir::TargetLimits{});
  REQUIRE(l.ok());
  emu::Emulator emulator;
  EmulatedCheck control = check_source_in_emulator(*tmpl, *l.source, emulator);
  INFO("control run: " << control.status << " " << control.message);
  REQUIRE(control.passed);

  LoosenTailGuard plant(limit);
  ir::Kernel buggy = l.kernel;
  buggy.body = plant.mutate(l.kernel.body);
  REQUIRE(plant.loosened > 0);
  ir_text = ir::to_string(buggy);
  ir::VerifyResult v = ir::verify(buggy, ir::TargetLimits{});
  REQUIRE(v.ok());  // the verifier cannot see this bug: only the emulator can
  return check_source_in_emulator(*tmpl, generate_cuda(buggy, v.launch), emulator);
}

}  // namespace

TEST_CASE("8 gemm_nn configurations on 127x255x63 match the reference", "[gemm][emulator]") {
  emulate_sample("gemm_nn", {127, 255, 63}, 8, 201);
}

TEST_CASE("6 gemm_nn configurations on 1x1000x17 match the reference", "[gemm][emulator]") {
  emulate_sample("gemm_nn", {1, 1000, 17}, 6, 202);
}

TEST_CASE("6 gemm_nn configurations on 33x65x130 match the reference", "[gemm][emulator]") {
  emulate_sample("gemm_nn", {33, 65, 130}, 6, 203);
}

TEST_CASE("6 gemm_nt configurations on 127x255x63 match the reference", "[gemm][emulator]") {
  emulate_sample("gemm_nt", {127, 255, 63}, 6, 204);
}

TEST_CASE("6 gemm_nt configurations on 70x9x36 match the reference", "[gemm][emulator]") {
  emulate_sample("gemm_nt", {70, 9, 36}, 6, 205);
}

// Every value of every knob, on shapes with tails in M, N and K (vector loads against a K or
// N tail, smem_pad=1, every unroll and double-buffer choice), each run in the emulator.
void emulate_stratified(const std::string& layout, std::vector<int64_t> shape, uint64_t seed) {
  auto tmpl = make_template("gemm", shape, layout);
  emu::Emulator emulator;
  std::vector<std::string> missing;
  const auto lowers = [&](const Config& c) { return lower(*tmpl, c, ir::TargetLimits{}).ok(); };
  std::vector<Config> configs = test::stratified_configs(*tmpl, seed, lowers, &missing);
  INFO("knob values no usable configuration had: " << missing.size());
  for (const std::string& m : missing) UNSCOPED_INFO(m);
  CHECK(missing.empty());
  const double tolerance = error_tolerance("float32", tmpl->reduction_length());
  for (const Config& c : configs) {
    EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator, tolerance);
    INFO(test::describe(*tmpl, c) << "\nstatus " << r.status << ": " << r.message);
    CHECK(r.passed);
  }
}

TEST_CASE("every gemm_nn knob value runs on 127x260x68 in the emulator", "[gemm][emulator]") {
  emulate_stratified("gemm_nn", {127, 260, 68}, 301);
}

TEST_CASE("every gemm_nt knob value runs on 70x132x36 in the emulator", "[gemm][emulator]") {
  emulate_stratified("gemm_nt", {70, 132, 36}, 302);
}

TEST_CASE("the reference configurations pass on 256x256x256", "[gemm][emulator]") {
  for (const char* layout : {"gemm_nn", "gemm_nt"}) {
    auto tmpl = make_template("gemm", {256, 256, 256}, layout);
    emu::Emulator emulator;
    for (const Config& c : tmpl->reference_configs()) {
      EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator);
      INFO(test::describe(*tmpl, c) << "\nstatus " << r.status << ": " << r.message);
      CHECK(r.passed);
    }
  }
}

TEST_CASE("a planted off-by-one in the M tail guard is an out-of-bounds write to C",
          "[gemm][emulator][planted]") {
  std::string ir_text;
  EmulatedCheck r = run_with_planted_bug("gemm_nn", 127, ir_text);
  INFO("buggy IR:\n" << ir_text << "status " << r.status << ": " << r.message);
  CHECK_FALSE(r.passed);
  CHECK((r.status == "out_of_bounds" || r.status == "race"));
  CHECK_THAT(r.message, Catch::Contains("C["));
}

// The widened guard lets the last column of threads write one element past its tile: into the
// next block's tile (a race between blocks, which the sanitizer reports first) or past C's end
// (out of bounds). Either names C.
TEST_CASE("a planted off-by-one in the N tail guard is a bad write to C",
          "[gemm][emulator][planted]") {
  std::string ir_text;
  EmulatedCheck r = run_with_planted_bug("gemm_nt", 255, ir_text);
  INFO("buggy IR:\n" << ir_text << "status " << r.status << ": " << r.message);
  CHECK_FALSE(r.passed);
  CHECK((r.status == "out_of_bounds" || r.status == "race"));
  CHECK_THAT(r.message, Catch::Contains("C["));
}
