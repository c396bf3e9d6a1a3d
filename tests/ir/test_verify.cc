#include "src/ir/verify.h"

#include <catch2/catch.hpp>

#include "tests/ir/ir_test_util.h"

using namespace cutune::ir;
using cutune::test::global_f32;
using cutune::test::v;

namespace {

const Buffer kOut = global_f32("C", 1 << 20);

Stmt touch(const Expr& index) { return Store::make(kOut, index, f32(1.0)); }

Kernel kernel_of(Stmt body) { return Kernel{"k", {kOut}, {}, std::move(body)}; }

VerifyResult verify_body(Stmt body, const TargetLimits& limits = {}) {
  return verify(kernel_of(std::move(body)), limits);
}

std::string joined(const VerifyResult& r) {
  std::string s;
  for (const std::string& e : r.errors) s += e + "\n";
  return s;
}

// Checks that verification failed with exactly one error mentioning `needle`.
#define CHECK_ONE_ERROR(body, needle)                                  \
  do {                                                                 \
    Stmt body_ = (body);                                               \
    VerifyResult r_ = verify_body(body_);                              \
    INFO("input:\n" << to_string(body_) << "errors:\n" << joined(r_)); \
    CHECK(r_.errors.size() == 1);                                      \
    CHECK_THAT(joined(r_), Catch::Contains(needle));                   \
  } while (0)

#define CHECK_VERIFIES(body)                                           \
  do {                                                                 \
    Stmt body_ = (body);                                               \
    VerifyResult r_ = verify_body(body_);                              \
    INFO("input:\n" << to_string(body_) << "errors:\n" << joined(r_)); \
    CHECK(r_.ok());                                                    \
  } while (0)

}  // namespace

TEST_CASE("the launch shape is read off bound loops and allocations", "[verify]") {
  Buffer s = Buffer::make("S", Type::f32(), MemoryScope::shared, 1024);
  Buffer s2 = Buffer::make("S2", Type::f32(), MemoryScope::shared, 256);
  Buffer l = Buffer::make("L", Type::f32(), MemoryScope::local, 16);
  Stmt body = For::make(
      "by", 0, 3, ForKind::block_y,
      For::make(
          "bx", 0, 7, ForKind::block_x,
          For::make("ty", 0, 4, ForKind::thread_y,
                    For::make("tx", 0, 32, ForKind::thread_x,
                              Allocate::make(
                                  s, Allocate::make(
                                         s2, Allocate::make(l, touch(v("tx") + v("ty") * 32))))))));
  VerifyResult r = verify_body(body);
  INFO(joined(r));
  REQUIRE(r.ok());
  const LaunchShape& shape = r.launch;
  CHECK(shape.grid[0] == 7);
  CHECK(shape.grid[1] == 3);
  CHECK(shape.grid[2] == 1);
  CHECK(shape.block[0] == 32);
  CHECK(shape.block[1] == 4);
  CHECK(shape.block[2] == 1);
  CHECK(shape.threads_per_block() == 128);
  CHECK(shape.blocks() == 21);
  CHECK(shape.shared_bytes == (1024 + 256) * 4);
  CHECK(shape.local_bytes == 16 * 4);
}

TEST_CASE("a kernel with no bound loops is one thread in one block", "[verify]") {
  VerifyResult r = verify_body(touch(0));
  REQUIRE(r.ok());
  CHECK(r.launch.threads_per_block() == 1);
  CHECK(r.launch.blocks() == 1);
  CHECK(r.launch.shared_bytes == 0);
}

TEST_CASE("threads per block over the limit", "[verify]") {
  Stmt body = For::make("ty", 0, 2, ForKind::thread_y,
                        For::make("tx", 0, 1024, ForKind::thread_x, touch(v("tx"))));
  CHECK_ONE_ERROR(body, "2048 threads per block exceed the limit of 1024");
  TargetLimits small;
  small.max_threads_per_block = 256;
  VerifyResult r = verify_body(For::make("tx", 0, 512, ForKind::thread_x, touch(v("tx"))), small);
  CHECK_THAT(joined(r), Catch::Contains("512 threads per block exceed the limit of 256"));
  CHECK_ONE_ERROR(For::make("tz", 0, 128, ForKind::thread_z, touch(v("tz"))),
                  "block dimension z = 128 exceeds 64");
  CHECK_ONE_ERROR(For::make("by", 0, 70000, ForKind::block_y, touch(v("by"))),
                  "grid dimension y = 70000 exceeds 65535");
}

TEST_CASE("every loop bound to one axis has the same extent", "[verify]") {
  Stmt agree = Block::make({For::make("tx", 0, 64, ForKind::thread_x, touch(v("tx"))),
                            For::make("tx2", 0, 64, ForKind::thread_x, touch(v("tx2")))});
  CHECK_VERIFIES(agree);
  Stmt disagree = Block::make({For::make("tx", 0, 64, ForKind::thread_x, touch(v("tx"))),
                               For::make("tx2", 0, 32, ForKind::thread_x, touch(v("tx2")))});
  CHECK_ONE_ERROR(disagree,
                  "loop tx2 bound to threadIdx.x has extent 32, but another loop "
                  "bound to it has 64");
  // Different axes are independent.
  CHECK_VERIFIES(Block::make({For::make("tx", 0, 64, ForKind::thread_x, touch(v("tx"))),
                              For::make("ty", 0, 8, ForKind::thread_y, touch(v("ty")))}));
}

TEST_CASE("a block binding inside a loop is an error", "[verify]") {
  Stmt inside = For::make("i", 0, 4, ForKind::serial,
                          For::make("bx", 0, 8, ForKind::block_x, touch(v("bx") + v("i"))));
  CHECK_ONE_ERROR(inside, "loop bx is bound to blockIdx.x inside another loop");
  Stmt under_thread = For::make("tx", 0, 32, ForKind::thread_x,
                                For::make("bx", 0, 8, ForKind::block_x, touch(v("bx"))));
  CHECK_ONE_ERROR(under_thread, "inside another loop");
  // Block bindings nested in block bindings are the normal case.
  CHECK_VERIFIES(For::make("by", 0, 4, ForKind::block_y,
                           For::make("bx", 0, 8, ForKind::block_x, touch(v("bx") + v("by")))));
}

TEST_CASE("a barrier under a thread-dependent condition is an error", "[verify]") {
  Expr tx = v("tx"), n = v("n");
  auto in_threads = [](Stmt s) { return For::make("tx", 0, 64, ForKind::thread_x, s); };
  CHECK_ONE_ERROR(in_threads(IfThenElse::make(tx < 32, Sync::make())),
                  "barrier (sync) is under a thread-dependent condition");
  CHECK_ONE_ERROR(in_threads(IfThenElse::make(tx < 32, touch(tx), Sync::make())),
                  "thread-dependent");  // the else branch diverges as much as the then branch
  // A let-bound value derived from the thread index is thread-dependent too.
  CHECK_ONE_ERROR(
      in_threads(LetStmt::make("t", tx % 4, IfThenElse::make(v("t") < 2, Sync::make()))),
      "thread-dependent");
  // So is a loop whose extent depends on the thread index.
  CHECK_ONE_ERROR(in_threads(For::make("k", 0, tx, ForKind::serial, Sync::make())),
                  "thread-dependent");
  // Uniform conditions and loops are fine.
  CHECK_VERIFIES(in_threads(IfThenElse::make(n < 32, Sync::make())));
  CHECK_VERIFIES(
      in_threads(For::make("k", 0, n, ForKind::serial, Block::make({touch(tx), Sync::make()}))));
  CHECK_VERIFIES(in_threads(Block::make({IfThenElse::make(tx < 32, touch(tx)), Sync::make()})));
}

TEST_CASE("shared memory within the opt-in limit passes, above it is an error", "[verify]") {
  auto with_shared = [](int64_t floats) {
    Buffer s = Buffer::make("S", Type::f32(), MemoryScope::shared, floats);
    return For::make("tx", 0, 32, ForKind::thread_x,
                     Allocate::make(s, Store::make(s, v("tx"), f32(0.0))));
  };
  VerifyResult big = verify_body(with_shared(25 * 1024));  // 100 KiB: needs the opt-in
  INFO(joined(big));
  CHECK(big.ok());
  CHECK(big.launch.shared_bytes == 100 * 1024);
  CHECK_ONE_ERROR(with_shared(60000),
                  "240000 bytes of shared memory exceed the sm_90 limit of "
                  "232448");
  TargetLimits small;
  small.arch = "sm_80";
  small.max_shared_bytes_optin = 163 * 1024;
  VerifyResult r = verify_body(with_shared(25 * 1024), small);
  CHECK(r.ok());
  r = verify_body(with_shared(42 * 1024), small);
  CHECK_THAT(joined(r), Catch::Contains("exceed the sm_80 limit"));
}

TEST_CASE("an access provably outside its buffer is an error", "[verify]") {
  Buffer s = Buffer::make("S", Type::f32(), MemoryScope::shared, 64);
  auto in_loop = [&](Expr index) {
    return For::make("i", 0, 8, ForKind::serial,
                     Allocate::make(s, Store::make(s, std::move(index), f32(0.0))));
  };
  CHECK_VERIFIES(in_loop(v("i") * 8 + 7));
  CHECK_ONE_ERROR(in_loop(v("i") + 64), "store to S at an index always outside its 64 elements");
  CHECK_ONE_ERROR(in_loop(v("i") - 8), "outside");
  // Partly outside is left to guards and the emulator.
  CHECK_VERIFIES(in_loop(v("i") * 9 + 1));
}
