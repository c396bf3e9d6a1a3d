// A suite's summary against its baseline counts only tasks with both times, and says how many;
// the record fields of the measuring loop (trial, kind) round-trip and stay optional.

#include <catch2/catch.hpp>

#include <cmath>

#include "src/records/baseline_ratio.h"
#include "src/records/record.h"
#include "tests/records/record_fixtures.h"

using namespace cutune;

TEST_CASE("baseline ratios cover only the tasks with both times", "[records]") {
  const BaselineRatios r =
      baseline_ratios({2.0, 1.0, std::nullopt, 3.0, 4.0}, {1.0, std::nullopt, 5.0, 1.0, 0.0});
  CHECK(r.total == 5);
  CHECK(r.counted == 2);  // the third has no baseline, the second no tuned time, the last 0
  CHECK(r.ratios == std::vector<double>{2.0, 3.0});
  REQUIRE(r.geomean);
  CHECK(*r.geomean == Approx(std::sqrt(6.0)));
  CHECK(*r.median == Approx(2.5));

  const BaselineRatios odd = baseline_ratios({1.0, 1.0, 1.0}, {0.5, 2.0, 1.0});
  CHECK(*odd.median == Approx(1.0));
  CHECK(*odd.geomean == Approx(1.0));

  const BaselineRatios none = baseline_ratios({std::nullopt}, {1.0});
  CHECK(none.counted == 0);
  CHECK(none.total == 1);
  CHECK(!none.geomean);
  CHECK(!none.median);
  CHECK_THROWS_AS(baseline_ratios({1.0}, {}), std::logic_error);
}

TEST_CASE("records keep their trial number and kind, older lines have neither", "[records]") {
  Record r = testing::make_record(testing::gemm_task(), 7, {1e-3, 2e-3});
  r.trial = 41;
  r.kind = RecordKind::remeasure;
  const std::string line = encode_record(r);
  CHECK(line.find("\"trial\":41") != std::string::npos);
  CHECK(line.find("\"kind\":\"remeasure\"") != std::string::npos);
  CHECK(decode_record(line) == r);

  Record plain = testing::make_record(testing::gemm_task(), 7, {1e-3});
  const std::string old = encode_record(plain);
  CHECK(old.find("trial") == std::string::npos);
  CHECK(old.find("kind") == std::string::npos);
  const Record back = decode_record(old);
  CHECK(back.trial == -1);
  CHECK(back.kind == RecordKind::trial);

  std::string bad = line;
  bad.replace(bad.find("\"remeasure\""), 11, "\"again\"");
  CHECK_THROWS_AS(decode_record(bad), RecordError);
  std::string negative = line;
  negative.replace(negative.find("41"), 2, "-4");
  CHECK_THROWS_AS(decode_record(negative), RecordError);
}
