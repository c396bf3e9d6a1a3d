// mbarrier state (src/emulator/async_barriers.h) against the PTX ISA's definitions: phases and
// their parity, arrival counts, tx-counts, and the misuses it reports.
#include <catch2/catch.hpp>

#include "src/emulator/async_barriers.h"

using cutune::emu::AsyncBarriers;

TEST_CASE("a phase completes when its arrivals are in, and parity follows the phase",
          "[mbarrier]") {
  AsyncBarriers b;
  long long bar = 0;
  REQUIRE(b.init(&bar, 3).empty());
  CHECK(b.find(&bar)->phase == 0);
  // A fresh barrier: the phase of parity 1 ("the one before phase 0") counts as complete.
  CHECK_FALSE(b.phase_done(&bar, 0));
  CHECK(b.phase_done(&bar, 1));
  REQUIRE(b.arrive(&bar, 1, 0).empty());
  REQUIRE(b.arrive(&bar, 1, 0).empty());
  CHECK(b.find(&bar)->pending == 1);
  CHECK_FALSE(b.phase_done(&bar, 0));
  REQUIRE(b.arrive(&bar, 1, 0).empty());
  CHECK(b.find(&bar)->phase == 1);
  CHECK(b.find(&bar)->pending == 3);  // reloaded with the expected count
  CHECK(b.phase_done(&bar, 0));
  CHECK_FALSE(b.phase_done(&bar, 1));
  REQUIRE(b.arrive(&bar, 3, 0).empty());  // arrive with a count
  CHECK(b.find(&bar)->phase == 2);
  CHECK(b.phase_done(&bar, 1));
  CHECK(b.completions() == 2);
}

TEST_CASE("transaction bytes: expect_tx adds, complete_tx subtracts, both must reach zero",
          "[mbarrier]") {
  AsyncBarriers b;
  long long bar = 0;
  REQUIRE(b.init(&bar, 1).empty());
  REQUIRE(b.arrive(&bar, 1, 4096).empty());  // arrive.expect_tx: arrivals done, 4096 bytes due
  CHECK(b.find(&bar)->pending == 0);
  CHECK(b.find(&bar)->tx == 4096);
  CHECK(b.find(&bar)->phase == 0);
  REQUIRE(b.note_issue(&bar, 2048).empty());
  REQUIRE(b.note_issue(&bar, 2048).empty());
  REQUIRE(b.complete_tx(&bar, 2048).empty());
  CHECK(b.find(&bar)->phase == 0);
  REQUIRE(b.complete_tx(&bar, 2048).empty());
  CHECK(b.find(&bar)->phase == 1);
  CHECK(b.find(&bar)->tx == 0);

  // A plain expect_tx (no arrival) before the arrival: the phase waits for both.
  REQUIRE(b.arrive(&bar, 0, 512).empty());
  REQUIRE(b.note_issue(&bar, 512).empty());
  REQUIRE(b.complete_tx(&bar, 512).empty());
  CHECK(b.find(&bar)->phase == 1);  // the arrival is still pending
  REQUIRE(b.arrive(&bar, 1, 0).empty());
  CHECK(b.find(&bar)->phase == 2);
  CHECK(b.describe(&bar) == "phase 2, 1 of 1 arrivals pending, tx-count 0 bytes");
}

TEST_CASE("an expect_tx that counts too few bytes is reported when the phase completes early",
          "[mbarrier]") {
  AsyncBarriers b;
  long long bar = 0;
  REQUIRE(b.init(&bar, 1).empty());
  REQUIRE(b.arrive(&bar, 1, 1024).empty());  // two 1024-byte copies, one counted
  REQUIRE(b.note_issue(&bar, 1024).empty());
  REQUIRE(b.note_issue(&bar, 1024).empty());
  std::string err = b.complete_tx(&bar, 1024);
  CHECK(err.find("expect_tx count is too small") != std::string::npos);
  CHECK(err.find("1024 bytes") != std::string::npos);
}

TEST_CASE("mbarrier misuse is reported", "[mbarrier]") {
  AsyncBarriers b;
  long long bar = 0, other = 0;
  CHECK(b.arrive(&bar, 1, 0) == "mbarrier arrive on a barrier that is not initialised");
  CHECK_FALSE(b.init(&bar, 0).empty());
  CHECK_FALSE(b.init(&bar, 1 << 20).empty());
  REQUIRE(b.init(&bar, 2).empty());
  REQUIRE(b.arrive(&bar, 0, 100).empty());
  REQUIRE(b.arrive(&bar, 2, 0).empty());  // arrivals done, 100 bytes still due
  std::string err = b.arrive(&bar, 1, 0);
  CHECK(err.find("with 0 of 2 arrivals pending") != std::string::npos);
  CHECK_FALSE(b.arrive(&bar, 0, 1 << 20).empty());  // tx-count out of range
  CHECK_FALSE(b.note_issue(&other, 16).empty());
  REQUIRE(b.inval(&bar).empty());
  CHECK(b.find(&bar) == nullptr);
  CHECK_FALSE(b.inval(&bar).empty());
  CHECK(b.describe(&bar) == "not initialised");
}
