#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "src/space/config_space.h"

using cutune::Config;
using cutune::ConfigError;
using cutune::ConfigSpace;
using cutune::KnobKind;

namespace {

// A space of about 2.5 * 10^10 points: 4-way splits of 2^10 (286 entities each) and 2^12 (455),
// a 3-way split of 2^6 (28), and some choices.
ConfigSpace make_large_space() {
  ConfigSpace space;
  space.define_split("tile_m", 1024, 4);
  space.define_split("tile_n", 1024, 4);
  space.define_split("tile_b", 4096, 4);
  space.define_split("tile_k", 64, 3);
  space.define_choice("vec", {1, 2, 4, 8});
  space.define_bool("unroll");
  space.define_choice("stages", {1, 2, 3});
  return space;
}

}  // namespace

TEST_CASE("split knob enumerates ordered factorisations") {
  ConfigSpace space;
  space.define_split("s", 24, 3);
  const auto& k = space.knob("s");
  CHECK(k.kind() == KnobKind::split);
  CHECK(k.extent() == 24);
  CHECK(k.parts() == 3);
  int64_t brute = 0;
  for (int a = 1; a <= 24; ++a)
    for (int b = 1; b <= 24; ++b)
      for (int c = 1; c <= 24; ++c)
        if (a * b * c == 24) ++brute;
  CHECK(k.cardinality() == brute);
  CHECK(space.size() == static_cast<uint64_t>(brute));
  std::set<std::vector<int64_t>> seen;
  for (int64_t e = 0; e < k.cardinality(); ++e) {
    const auto& f = k.split_factors(e);
    REQUIRE(f.size() == 3);
    CHECK(f[0] * f[1] * f[2] == 24);
    seen.insert(f);
    CHECK(k.find_factors(f) == e);
  }
  CHECK(seen.size() == static_cast<size_t>(brute));
  std::vector<int64_t> not_a_split{2, 2, 2};
  CHECK_FALSE(k.find_factors(not_a_split).has_value());
}

TEST_CASE("split filter sees the factors") {
  ConfigSpace space;
  space.define_split("s", 64, 2, [](std::span<const int64_t> f) { return f[1] <= 8; });
  const auto& k = space.knob("s");
  for (int64_t e = 0; e < k.cardinality(); ++e) CHECK(k.split_factors(e)[1] <= 8);
  CHECK(k.cardinality() == 4);  // inner 1, 2, 4, 8
  CHECK_THROWS_AS(space.define_split("t", 8, 2, [](auto) { return false; }), ConfigError);
  CHECK_THROWS_AS(space.define_split("u", 0, 2), ConfigError);
  CHECK_THROWS_AS(space.define_split("v", 8, 0), ConfigError);
}

TEST_CASE("choice and bool knobs") {
  ConfigSpace space;
  space.define_choice("vec", {1, 2, 4});
  space.define_bool("flag");
  CHECK(space.size() == 6);
  CHECK(space.knob("vec").kind() == KnobKind::choice);
  CHECK(space.knob("flag").kind() == KnobKind::boolean);
  CHECK(space.knob("vec").find_value(4) == 2);
  CHECK_FALSE(space.knob("vec").find_value(3).has_value());
  CHECK(space.knob_position("flag") == 1);
  CHECK_THROWS_AS(space.knob_position("nope"), ConfigError);
  CHECK_THROWS_AS(space.define_choice("vec", {8}), ConfigError);
  CHECK_THROWS_AS(space.define_choice("empty", {}), ConfigError);
  CHECK_THROWS_AS(space.define_choice("dup", {1, 1}), ConfigError);
  Config c = space.get(5);  // vec entity 2, flag entity 1 (first knob least significant)
  CHECK(c.get("vec") == 4);
  CHECK(c.get(1) == 1);
  CHECK(c.to_string() == "vec=4 flag=1");
  CHECK_THROWS_AS(space.get(6), ConfigError);
}

TEST_CASE("a choice of a million values is defined at once and its repeats still found") {
  // Pairwise, the repeat check took hours here (5e11 comparisons); sorted, milliseconds.
  std::vector<int64_t> values(1'000'000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = int64_t(values.size() - i);
  ConfigSpace space;
  space.define_choice("many", values);
  CHECK(space.size() == 1'000'000);
  CHECK(space.get(999'999).get("many") == 1);
  values[500'000] = 7;
  CHECK_THROWS_WITH(ConfigSpace().define_choice("twice", values),
                    Catch::Contains("choice 'twice' lists 7 twice"));
}

TEST_CASE("knobs are found by name when names share length and their first 8 bytes") {
  ConfigSpace space;
  space.define_choice("tile_size_x", {1, 2});
  space.define_choice("tile_size_y", {3, 4});
  space.define_choice("tile_siz", {5, 6});  // exactly 8 bytes
  space.define_choice("t", {7, 8});
  space.define_choice("", {9});  // an empty name is a name too
  Config c = space.get(0);
  CHECK(space.knob_position("tile_size_x") == 0);
  CHECK(space.knob_position("tile_size_y") == 1);
  CHECK(space.knob_position("tile_siz") == 2);
  CHECK(space.knob_position("t") == 3);
  CHECK(space.knob_position("") == 4);
  CHECK(c.get("tile_size_y") == 3);
  CHECK(c.get("tile_siz") == 5);
  CHECK_THROWS_AS(space.knob_position("tile_size_z"), ConfigError);
  CHECK_THROWS_AS(space.knob_position("tile_si"), ConfigError);
  CHECK_THROWS_AS(space.knob_position("tile_size_xx"), ConfigError);
  CHECK_THROWS_AS(space.knob_position(std::string_view("tile_siz\0", 9)), ConfigError);
}

TEST_CASE("mixed-radix index round trips on a space of more than 10^9 points") {
  ConfigSpace space = make_large_space();
  REQUIRE(space.size() > 1'000'000'000ULL);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> pick(0, space.size() - 1);
  for (int i = 0; i < 2000; ++i) {
    uint64_t index = pick(rng);
    Config c = space.get(index);
    CHECK(c.index() == index);
    CHECK(space.index_of(c) == index);
    CHECK(space.from_json(c.to_json()) == c);
  }
  Config last = space.get(space.size() - 1);
  for (size_t i = 0; i < space.knobs().size(); ++i)
    CHECK(last.entities()[i] == space.knobs()[i].cardinality() - 1);
}

TEST_CASE("size beyond 2^63 is a ConfigError") {
  ConfigSpace space;
  for (int i = 0; i < 8; ++i)
    space.define_choice("k" + std::to_string(i), std::vector<int64_t>([] {
                          std::vector<int64_t> v(400);
                          for (int j = 0; j < 400; ++j) v[j] = j;
                          return v;
                        }()));
  CHECK_THROWS_AS(space.size(), ConfigError);
  CHECK_FALSE(space.count_valid().has_value());
}

TEST_CASE("constraints and violation messages") {
  ConfigSpace space;
  space.define_choice("x", {1, 2, 4, 8});
  space.define_choice("y", {1, 2, 4, 8});
  space.add_constraint("x * y <= 16", [](const Config& c) { return c.get(0) * c.get(1) <= 16; });
  space.add_constraint("x >= y", [](const Config& c) { return c.get(0) >= c.get(1); });
  Config ok = space.from_json({{"knobs", {{"x", 4}, {"y", 2}}}});
  CHECK(space.is_valid(ok));
  CHECK_FALSE(space.violation(ok).has_value());
  Config big = space.from_json({{"knobs", {{"x", 8}, {"y", 4}}}});
  CHECK_FALSE(space.is_valid(big));
  CHECK(space.violation(big) == "x * y <= 16");
  Config order = space.from_json({{"knobs", {{"x", 1}, {"y", 2}}}});
  CHECK(space.violation(order) == "x >= y");
  // x >= y and x*y <= 16: (1,1) (2,1) (2,2) (4,1) (4,2) (4,4) (8,1) (8,2)
  CHECK(space.count_valid() == 8);
  CHECK_FALSE(space.count_valid(10).has_value());
}

TEST_CASE("sample_valid is uniform over valid points and never invalid") {
  ConfigSpace space;
  space.define_choice("a", {0, 1, 2, 3, 4});
  space.define_choice("b", {0, 1, 2, 3});
  space.add_constraint("a + b odd", [](const Config& c) { return (c.get(0) + c.get(1)) % 2 == 1; });
  const uint64_t valid = *space.count_valid();
  REQUIRE(valid == 10);
  std::mt19937_64 rng(12345);
  std::map<uint64_t, int> counts;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) {
    auto c = space.sample_valid(rng);
    REQUIRE(c.has_value());
    REQUIRE(space.is_valid(*c));
    ++counts[c->index()];
  }
  CHECK(counts.size() == valid);
  const double expected = static_cast<double>(draws) / static_cast<double>(valid);
  double chi2 = 0;
  for (const auto& [index, n] : counts) chi2 += (n - expected) * (n - expected) / expected;
  // 9 degrees of freedom: p = 0.001 at 27.9.
  CHECK(chi2 < 27.9);

  ConfigSpace impossible;
  impossible.define_choice("a", {1, 2});
  impossible.add_constraint("never", [](const Config&) { return false; });
  CHECK_FALSE(impossible.sample_valid(rng, 100).has_value());
}

TEST_CASE("sample_valid repairs a draw where rejection misses a rare valid point") {
  // Six knobs of 10 values, each fixed by its own constraint: one valid point in a million,
  // which 10 uniform draws all but never hit; the repair sets the knobs one at a time.
  ConfigSpace space;
  for (int k = 0; k < 6; ++k) {
    space.define_choice(fmt::format("k{}", k), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    space.add_constraint(fmt::format("k{} is {}", k, (3 * k + 1) % 10),
                         [k](const Config& c) { return c.get(k) == (3 * k + 1) % 10; });
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5; ++i) {
    const std::optional<Config> c = space.sample_valid(rng, 10);
    REQUIRE(c.has_value());
    CHECK(space.is_valid(*c));
    for (int k = 0; k < 6; ++k) CHECK(c->get(k) == (3 * k + 1) % 10);
  }
}

TEST_CASE("neighbours differ in exactly one knob") {
  ConfigSpace space;
  space.define_split("s", 16, 2);  // 5 entities
  space.define_choice("v", {1, 2, 4});
  space.define_bool("b");
  space.define_choice("fixed", {7});
  space.add_constraint("v != 4", [](const Config& c) { return c.get(1) != 4; });
  Config c = space.get(0);
  auto differing = [](const Config& a, const Config& b) {
    int n = 0;
    for (size_t i = 0; i < a.entities().size(); ++i) n += a.entities()[i] != b.entities()[i];
    return n;
  };
  auto all = space.neighbours(c, false);
  CHECK(all.size() == 4 + 2 + 1);
  for (const auto& n : all) CHECK(differing(c, n) == 1);
  auto valid = space.neighbours(c, true);
  CHECK(valid.size() == 4 + 1 + 1);
  for (const auto& n : valid) CHECK(space.is_valid(n));

  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) {
    auto n = space.random_neighbour(c, rng);
    REQUIRE(n.has_value());
    CHECK(differing(c, *n) == 1);
    CHECK(space.is_valid(*n));
  }
  ConfigSpace frozen;
  frozen.define_choice("only", {3});
  CHECK_FALSE(frozen.random_neighbour(frozen.get(0), rng).has_value());
  // No valid neighbour at all (every move breaks the constraint): nothing, not an invalid draw.
  ConfigSpace pinned;
  pinned.define_choice("a", {1, 2, 3});
  pinned.define_choice("b", {1, 2, 3});
  pinned.add_constraint("a equals b", [](const Config& x) { return x.get("a") == x.get("b"); });
  CHECK_FALSE(pinned.random_neighbour(pinned.get(0), rng).has_value());
}

TEST_CASE("JSON round trip and malformed JSON") {
  ConfigSpace space;
  space.define_split("tile", 32, 3);
  space.define_choice("vec", {1, 2, 4});
  space.define_bool("unroll");
  Config c = space.from_json({{"knobs", {{"tile", {2, 4, 4}}, {"vec", 2}, {"unroll", true}}}});
  CHECK(c.split("tile") == std::vector<int64_t>{2, 4, 4});
  CHECK(c.get("unroll") == 1);
  nlohmann::json j = c.to_json();
  CHECK(j["index"] == c.index());
  CHECK(space.from_json(j) == c);
  CHECK(space.from_json(nlohmann::json(c.index())) == c);
  CHECK(space.from_json({{"index", c.index()}}) == c);
  CHECK(space.from_json({{"knobs", {{"tile", {2, 4, 4}}, {"vec", 2}, {"unroll", 1}}}}) == c);
  CHECK(c.to_string() == "tile=[2,4,4] vec=2 unroll=1");

  auto message = [&](const nlohmann::json& bad) -> std::string {
    try {
      space.from_json(bad);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(message("text"), Contains("must be an object"));
  CHECK_THAT(message(nlohmann::json::array()), Contains("must be an object"));
  CHECK_THAT(message(nlohmann::json::object()), Contains("needs an \"index\""));
  CHECK_THAT(message({{"index", -1}}), Contains("non-negative"));
  CHECK_THAT(message({{"index", space.size()}}), Contains("out of range"));
  CHECK_THAT(message({{"knobs", 3}}), Contains("must be an object"));
  CHECK_THAT(message({{"knobs", {{"tile", {2, 4, 4}}, {"vec", 2}, {"unroll", 1}, {"x", 1}}}}),
             Contains("unknown knob 'x'"));
  CHECK_THAT(message({{"knobs", {{"tile", {2, 4, 4}}, {"vec", 2}}}}),
             Contains("missing knob 'unroll'"));
  CHECK_THAT(message({{"knobs", {{"tile", {2, 4, 8}}, {"vec", 2}, {"unroll", 1}}}}),
             Contains("knob 'tile' is not in its domain"));
  CHECK_THAT(message({{"knobs", {{"tile", {2, 4, 4}}, {"vec", 3}, {"unroll", 1}}}}),
             Contains("knob 'vec' is not in its domain"));
  CHECK_THAT(message({{"knobs", {{"tile", {2, 4, 4}}, {"vec", "2"}, {"unroll", 1}}}}),
             Contains("knob 'vec' is not in its domain"));
  CHECK_THAT(message({{"index", c.index() + 1},
                      {"knobs", {{"tile", {2, 4, 4}}, {"vec", 2}, {"unroll", 1}}}}),
             Contains("disagrees"));
  // One line each.
  CHECK(message({{"knobs", 3}}).find('\n') == std::string::npos);
}

TEST_CASE("describe lists knobs and size") {
  ConfigSpace space;
  space.define_split("tile", 8, 2);
  space.define_choice("vec", {1, 2});
  space.add_constraint("c", [](const Config&) { return true; });
  nlohmann::json d = space.describe();
  CHECK(d["size"] == 8);
  CHECK(d["knobs"][0]["kind"] == "split");
  CHECK(d["knobs"][0]["cardinality"] == 4);
  CHECK(d["knobs"][1]["values"] == nlohmann::json({1, 2}));
  CHECK(d["constraints"][0] == "c");
}

TEST_CASE("a choice with an if-omitted value fills configurations written without it",
          "[space][json]") {
  ConfigSpace space;
  space.define_choice("x", {1, 2, 4});
  space.define_choice("later", {1, 2}, 1);
  Config old = space.from_json({{"knobs", {{"x", 2}}}});
  CHECK(old.get("later") == 1);
  CHECK(old.index() == 1);  // a knob added last keeps the indices of its default's points
  CHECK(space.from_json({{"knobs", {{"x", 2}, {"later", 2}}}}).get("later") == 2);
  CHECK_THROWS_WITH(space.from_json({{"knobs", {{"later", 2}}}}),
                    Catch::Contains("missing knob 'x'"));
  ConfigSpace bad;
  CHECK_THROWS_AS(bad.define_choice("y", {1, 2}, 3), ConfigError);
}
