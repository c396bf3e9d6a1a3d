#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/dataset_skip.h"
#include "src/replay/python_expr.h"

using namespace cutune::replay;
using Catch::Matchers::Contains;

namespace {

const std::string kSpaces = CUTUNE_SOURCE_DIR "/../shared/datasets/spaces";

bool test(std::string_view text, std::vector<std::string> names, std::vector<int64_t> values) {
  return PythonExpr::parse(text, names).test(values);
}

double eval(std::string_view text) { return PythonExpr::parse(text, {}).evaluate({}); }

std::string error_of(std::string_view text, std::vector<std::string> names = {}) {
  try {
    PythonExpr::parse(text, names);
  } catch (const ExprError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("arithmetic follows Python") {
  CHECK(eval("1 + 2 * 3") == 7);
  CHECK(eval("(1 + 2) * 3") == 9);
  CHECK(eval("7 / 2") == 3.5);
  CHECK(eval("7 // 2") == 3);
  CHECK(eval("-7 // 2") == -4);
  CHECK(eval("-7 % 3") == 2);
  CHECK(eval("7 % -3") == -2);
  CHECK(eval("2 ** 3 ** 2") == 512);
  CHECK(eval("-2 ** 2") == -4);
  CHECK(eval("2 ** -1") == 0.5);
  CHECK(eval("10 - 3 - 2") == 5);
  CHECK(eval("32 % (64 / 8)") == 0);
  CHECK(eval("True + True") == 2);
  CHECK(PythonExpr::parse("5 // 2", {}).evaluate_int({}) == 2);
  CHECK_THROWS_AS(PythonExpr::parse("5 / 2", {}).evaluate_int({}), ExprError);
}

TEST_CASE("boolean logic and comparisons") {
  CHECK(eval("not 1 == 2") == 1);
  CHECK(eval("1 < 2 and 2 < 1") == 0);
  CHECK(eval("1 < 2 or 2 < 1") == 1);
  CHECK(eval("not 0 and 0 or 1") == 1);
  CHECK(eval("1 < 2 < 3") == 1);
  CHECK(eval("1 < 3 < 2") == 0);
  CHECK(eval("3 > 2 == 2") == 1);
  CHECK(eval("False or True") == 1);
  CHECK(eval("1 / 0 == 1 / 0") == 0);  // division by zero compares false
  CHECK_FALSE(PythonExpr::parse("1 // 0", {}).test({}));
}

TEST_CASE("names bind to positions") {
  std::vector<std::string> names{"MWG", "MDIMC", "VWM"};
  auto e = PythonExpr::parse("MWG % (MDIMC * VWM) == 0", names);
  CHECK(e.test(std::vector<int64_t>{64, 16, 4}));
  CHECK_FALSE(e.test(std::vector<int64_t>{64, 32, 4}));
  CHECK(e.used_positions() == std::vector<int>{0, 1, 2});
  std::vector<std::string> xy{"block_size_x", "block_size_y", "unused"};
  CHECK(test("32 <= block_size_x * block_size_y <= 1024", xy, {16, 2, 0}));
  CHECK_FALSE(test("32 <= block_size_x * block_size_y <= 1024", xy, {16, 1, 0}));
  CHECK_FALSE(test("32 <= block_size_x * block_size_y <= 1024", xy, {64, 32, 0}));
  CHECK(PythonExpr::parse("block_size_y < block_size_x", xy).used_positions() ==
        std::vector<int>{0, 1});
  std::vector<std::string> conv{"use_padding", "block_size_x"};
  CHECK(test("use_padding==0 or block_size_x % 32 != 0", conv, {0, 64}));
  CHECK(test("use_padding==0 or block_size_x % 32 != 0", conv, {1, 48}));
  CHECK_FALSE(test("use_padding==0 or block_size_x % 32 != 0", conv, {1, 64}));
  std::vector<std::string> gemm{"MWG", "NWG", "MDIMC", "NDIMC"};
  const char* kNot = "not (MWG == 128 and NWG == 128 and MDIMC == 8 and NDIMC == 8)";
  CHECK_FALSE(test(kNot, gemm, {128, 128, 8, 8}));
  CHECK(test(kNot, gemm, {128, 128, 8, 16}));
  std::vector<std::string> kwg{"KWG", "MDIMC", "NDIMC", "MDIMA"};
  CHECK(test("KWG % ((MDIMC * NDIMC)/MDIMA) == 0", kwg, {32, 8, 8, 16}));          // 32 % 4.0
  CHECK_FALSE(test("KWG % ((MDIMC * NDIMC)/MDIMA) == 0", kwg, {32, 32, 32, 16}));  // 32 % 64.0
}

TEST_CASE("parse errors name the position") {
  CHECK_THAT(error_of("(1 + 2"), Contains("expected ')'") && Contains("position 6"));
  CHECK_THAT(error_of("1 + 2)"), Contains("position 5"));
  CHECK_THAT(error_of("a + 1", {"b"}), Contains("unknown name 'a'") && Contains("position 0"));
  CHECK_THAT(error_of("b + c", {"b"}), Contains("unknown name 'c'") && Contains("position 4"));
  CHECK_THAT(error_of("1 +"), Contains("the end"));
  CHECK_THAT(error_of("1 $ 2"), Contains("unexpected character '$'") && Contains("position 2"));
  CHECK_THAT(error_of("1.5 < 2"), Contains("integer"));
  CHECK_THAT(error_of(""), Contains("empty"));
  CHECK(error_of("(1 + 2").find('\n') == std::string::npos);
  CHECK_THROWS_AS(PythonExpr::parse("1 2", {}), cutune::ConfigError);
}

TEST_CASE("values strings") {
  CHECK(parse_values("[1, 2, 4]") == std::vector<int64_t>{1, 2, 4});
  CHECK(parse_values("[]").empty());
  CHECK(parse_values("[3,]") == std::vector<int64_t>{3});
  CHECK(parse_values("list(range(4))") == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(parse_values("list(range(10, 0, -3))") == std::vector<int64_t>{10, 7, 4, 1});
  auto bsx = parse_values("[1, 2, 4, 8, 16] + list(range(32, 1024+1, 32))");
  REQUIRE(bsx.size() == 5 + 32);
  CHECK(bsx[5] == 32);
  CHECK(bsx.back() == 1024);
  CHECK(parse_values("[2**i for i in range(0, 6)]") == std::vector<int64_t>{1, 2, 4, 8, 16, 32});
  CHECK(parse_values("[i for i in range(1, 11)]").size() == 10);
  CHECK(parse_values("[i for i in range(1, 10+1)]").back() == 10);
  CHECK_THROWS_AS(parse_values("[1, 2"), ExprError);
  CHECK_THROWS_AS(parse_values("list(range(1, 2, 0))"), ExprError);
  CHECK_THROWS_AS(parse_values("[j for i in range(3)]"), ExprError);
  CHECK_THROWS_AS(parse_values("[1] - [2]"), ExprError);
}

TEST_CASE("every T1 condition and value list in the datasets parses") {
  cutune::test::require_dataset_path(kSpaces);
  int conditions = 0;
  for (const auto& file : std::filesystem::directory_iterator(kSpaces)) {
    if (file.path().extension() != ".json") continue;
    std::ifstream in(file.path());
    auto j = nlohmann::json::parse(in);
    std::vector<std::string> names;
    for (const auto& p : j["ConfigurationSpace"]["TuningParameters"]) {
      names.push_back(p["Name"]);
      CHECK_FALSE(parse_values(p["Values"].get<std::string>()).empty());
    }
    for (const auto& c : j["ConfigurationSpace"]["Conditions"]) {
      auto text = c["Expression"].get<std::string>();
      INFO(file.path().filename() << ": " << text);
      auto e = PythonExpr::parse(text, names);
      CHECK(e.text() == text);
      // The listed Parameters are read; convolution_milo's list omits the filter sizes.
      std::vector<std::string> declared = c["Parameters"];
      for (const auto& name : declared) {
        int position =
            static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
        CHECK(std::count(e.used_positions().begin(), e.used_positions().end(), position) == 1);
      }
      ++conditions;
    }
  }
  CHECK(conditions == 4 + 3 + 3 + 8 + 4);
}

TEST_CASE("hotspot values") {
  const std::string path = kSpaces + "/hotspot_milo.json";
  cutune::test::require_dataset_path(path);
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in);
  std::map<std::string, std::vector<int64_t>> values;
  for (const auto& p : j["ConfigurationSpace"]["TuningParameters"])
    values[p["Name"]] = parse_values(p["Values"].get<std::string>());
  CHECK(values["grid_width"] == std::vector<int64_t>{4096});
  CHECK(values["block_size_x"].size() == 37);
  CHECK(values["block_size_y"] == std::vector<int64_t>{1, 2, 4, 8, 16, 32});
  CHECK(values["tile_size_x"] == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(values["loop_unroll_factor_t"].back() == 10);
  CHECK(values["sh_power"] == std::vector<int64_t>{0, 1});
}

TEST_CASE("subscripts, extrema of a parameter and calls, as T1 size expressions write them") {
  std::vector<std::string> names = {"block_size_x", "ProblemSize[0]", "max(filter_width)"};
  std::vector<int64_t> values = {32, 4096, 15};
  CHECK(PythonExpr::parse("(ProblemSize[0] + max(filter_width) - 1) * 2", names)
            .evaluate_int(values) == (4096 + 15 - 1) * 2);
  CHECK(PythonExpr::parse("max(block_size_x, 64, 48)", names).evaluate_int(values) == 64);
  CHECK(PythonExpr::parse("min(block_size_x, 64)", names).evaluate_int(values) == 32);
  CHECK(PythonExpr::parse("int(ceil(ProblemSize[0] / 3))", names).evaluate_int(values) == 1366);
  CHECK(PythonExpr::parse("int(7 / 2)", {}).evaluate_int({}) == 3);
  CHECK(PythonExpr::parse("floor(-7 / 2)", {}).evaluate_int({}) == -4);
  CHECK_THAT(error_of("ProblemSize[3]", names), Contains("unknown name 'ProblemSize[3]'"));
  CHECK_THAT(error_of("max(tile)", names), Contains("unknown name 'max(tile)'"));
  CHECK_THAT(error_of("int(1, 2)", names), Contains("takes one argument"));
  CHECK_THAT(error_of("min(3)", names), Contains("needs a name"));
}
