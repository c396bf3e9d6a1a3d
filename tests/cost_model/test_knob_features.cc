#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>

#include "cost_model/features.h"
#include "src/space/config_space.h"

using namespace cutune;
using cutune::cost_model::make_knob_features;

TEST_CASE("knob features: magnitude and odd part of every knob value", "[features]") {
  ConfigSpace space;
  space.define_choice("block", {16, 48, 64, 96});
  space.define_bool("flag");
  auto f = make_knob_features(space);
  CHECK(f->size() == 4);
  CHECK(f->schema() == "knobs/v2:block,flag");
  CHECK(f->names() == std::vector<std::string>{"block", "block.odd", "flag", "flag.odd"});

  std::vector<float> row(4);
  auto features_of = [&](int64_t block, int64_t flag) {
    Config c = space.from_json(nlohmann::json{{"knobs", {{"block", block}, {"flag", flag}}}});
    f->extract(c, row);
    return row;
  };
  CHECK(features_of(64, 1) == std::vector<float>{float(std::log2(65.0)), 0.0f, 1.0f, 0.0f});
  // 48 = 16 * 3 and 96 = 32 * 3 share their odd part; powers of two (and 0) have none.
  CHECK(features_of(48, 0)[1] == Approx(std::log2(3.0)));
  CHECK(features_of(96, 0)[1] == Approx(std::log2(3.0)));
  CHECK(features_of(16, 0)[1] == 0.0f);
  CHECK(features_of(16, 0)[3] == 0.0f);
}
