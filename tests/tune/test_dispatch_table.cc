// The range of M and the dispatch table's choice (src/tune/dispatch_table.h): the points of a
// range, the text of ranges and lists (bad ones refused in one line), and the fewest-kernels
// choice on synthetic matrices: one kernel that suffices, ties, a kernel best only in the
// middle, a point no candidate but one comes near, failed candidates.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "kernels/template.h"
#include "src/tune/dispatch_table.h"

using namespace cutune;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

TEST_CASE("a range's points are powers of two and the midpoints between", "[dispatch]") {
  CHECK(range_points(1, 64, 32) == std::vector<int64_t>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64});
  CHECK(range_points(5, 20, 32) == std::vector<int64_t>{5, 6, 8, 12, 16, 20});
  // Capped: evenly over the list, the ends kept.
  const std::vector<int64_t> capped = range_points(1, 8192, 6);
  CHECK(capped.size() == 6);
  CHECK(capped.front() == 1);
  CHECK(capped.back() == 8192);
  CHECK(check_points({1, 2, 4, 16, 64}) == std::vector<int64_t>{3, 8, 32});
}

TEST_CASE("range and list shapes parse, bad ones are refused in one line", "[dispatch]") {
  const MRange r = parse_m_range("M=1..64,48,40", 3, 8);
  CHECK(r.is_range);
  CHECK(r.lo == 1);
  CHECK(r.hi == 64);
  CHECK(r.rest == std::vector<int64_t>{48, 40});
  CHECK(r.points.size() == 8);
  const MRange l = parse_m_range("M=128,1,16,16,4096,4096", 3, 8);
  CHECK_FALSE(l.is_range);
  CHECK(l.points == std::vector<int64_t>{1, 16, 128});
  CHECK(l.lo == 1);
  CHECK(l.hi == 128);
  CHECK(is_m_range("M=1..4,8,8"));
  CHECK_FALSE(is_m_range("4,8,8"));
  CHECK_THROWS_WITH(parse_m_range("M=8..1,64,48", 3, 8),
                    Catch::Contains("the range's first M must be below its last"));
  CHECK_THROWS_WITH(parse_m_range("Q=1..4,64,48", 3, 8),
                    Catch::Contains("only M may be a range or a list"));
  CHECK_THROWS_WITH(parse_m_range("M=1..4,N=1..8,48", 3, 8),
                    Catch::Contains("one dimension, M, may be a range"));
  CHECK_THROWS_WITH(parse_m_range("M=1..4,1..8,48", 3, 8),
                    Catch::Contains("one dimension, M, may be a range"));
  CHECK_THROWS_WITH(parse_m_range("M=1..4,8,64,48", 3, 8),
                    Catch::Contains("a range or a list, not both"));
  CHECK_THROWS_WITH(parse_m_range("M=0..4,64,48", 3, 8), Catch::Contains("'0' is not a size"));
  CHECK_THROWS_WITH(parse_m_range("M=4,64,48", 3, 8), Catch::Contains("two M or more"));
  CHECK_THROWS_WITH(parse_m_range("M=1..4,64", 3, 8),
                    Catch::Contains("M needs the other 2 sizes after it"));
  CHECK_THROWS_AS(parse_m_range("M=1..4,64,x", 3, 8), TaskError);
}

TEST_CASE("the dispatch choice takes the fewest kernels within the tolerance", "[dispatch]") {
  SECTION("one kernel suffices: within 3% everywhere, though never the fastest") {
    const std::vector<std::vector<double>> t = {
        {1.00, 2.50, 4.00, 8.00}, {1.02, 2.03, 4.10, 8.20}, {1.50, 1.98, 5.00, 9.00}};
    const auto s = choose_dispatch(t, 0.03);
    REQUIRE(s.size() == 1);
    CHECK(s[0].first == 0);
    CHECK(s[0].last == 3);
    CHECK(s[0].candidate == 1);
  }
  SECTION("small and large M want different kernels") {
    const std::vector<std::vector<double>> t = {{1.0, 2.0, 8.0, 20.0},   // skinny tiles
                                                {2.0, 3.0, 4.0, 10.0}};  // large tiles
    const auto s = choose_dispatch(t, 0.03);
    REQUIRE(s.size() == 2);
    CHECK(s[0].candidate == 0);
    CHECK(s[0].last == 1);
    CHECK(s[1].candidate == 1);
    CHECK(s[1].first == 2);
    const auto iv = segment_intervals(s, {1, 4, 16, 64}, 1, 100);
    REQUIRE(iv.size() == 2);
    CHECK(iv[0].lo == 1);
    CHECK(iv[0].hi == 15);
    CHECK(iv[1].lo == 16);
    CHECK(iv[1].hi == 100);
    CHECK(interval_of(iv, 15) == 0u);
    CHECK(interval_of(iv, 16) == 1u);
    CHECK(interval_of(iv, 1) == 0u);
    CHECK(interval_of(iv, 100) == 1u);
    CHECK_FALSE(interval_of(iv, 101).has_value());
  }
  SECTION("ties: equal tables are decided by the summed time, then the lower index") {
    // Both cover everything; candidate 1 is nearer the best in sum.
    const std::vector<std::vector<double>> t = {{1.00, 1.02}, {1.01, 1.00}};
    const auto s = choose_dispatch(t, 0.03);
    REQUIRE(s.size() == 1);
    CHECK(s[0].candidate == 1);
    // Identical rows: the first.
    const auto same = choose_dispatch({{1.0, 2.0}, {1.0, 2.0}}, 0.03);
    REQUIRE(same.size() == 1);
    CHECK(same[0].candidate == 0);
  }
  SECTION("a kernel best only in the middle, failed candidates") {
    const std::vector<std::vector<double>> t = {
        {1.0, 5.0, 5.0, 1.0}, {kInf, 1.0, 1.0, kInf}, {std::nan(""), 9.0, 9.0, 9.0}};
    const auto s = choose_dispatch(t, 0.03);
    REQUIRE(s.size() == 3);
    CHECK(s[0].candidate == 0);
    CHECK(s[1].candidate == 1);
    CHECK(s[1].first == 1);
    CHECK(s[1].last == 2);
    CHECK(s[2].candidate == 0);
    // With a tolerance that admits candidate 0 everywhere, one kernel.
    CHECK(choose_dispatch(t, 4.0).size() == 1);
  }
  SECTION("a point no candidate ran at") {
    CHECK_THROWS_WITH(choose_dispatch({{1.0, kInf}}, 0.03),
                      "no candidate ran at point 2 of the range");
  }
}
