// Transformer models as suites of GEMMs (kernels/gemm_suites.h): llama3-8b's products at each
// token count, model files, token lists, and the operator each layer is tuned with.

#include <catch2/catch.hpp>

#include "kernels/gemm_suites.h"
#include "kernels/template.h"

using namespace cutune;

TEST_CASE("gemm suites: llama3-8b is its four products at every token count", "[suite]") {
  const std::vector<SuiteLayer> layers = gemm_suite_layers(gemm_model("llama3-8b"),
                                                           default_tokens());
  REQUIRE(layers.size() == 4 * 5);
  CHECK(layers[0].name == "qkv.m1");
  CHECK(layers[0].shape == std::vector<int64_t>{1, 6144, 4096});
  CHECK(layers[4].shape == std::vector<int64_t>{4096, 6144, 4096});
  CHECK(layers[19].name == "down.m4096");
  CHECK(layers[19].shape == std::vector<int64_t>{4096, 4096, 14336});
  CHECK(layers[14].shape == std::vector<int64_t>{4096, 28672, 4096});  // gate_up.m4096
  for (const SuiteLayer& l : layers) {
    CHECK(l.op == "gemm");
    CHECK(l.layout == "nt");
    CHECK(l.repeat == 32);
    // Each layer resolves to the nt GEMM of its dtype, on Hopper the wgmma one.
    TaskRequest r;
    r.op = suite_layer_op(l, "bf16");
    r.layout = l.layout;
    CHECK(resolve_template(r, "sm_90").name == "gemm_bf16_wgmma_nt");
    CHECK(make_template(resolve_template(r, "sm_90").params, l.shape)->flops() ==
          2.0 * l.shape[0] * l.shape[1] * l.shape[2]);
  }
  CHECK_THROWS_WITH(suite_layers("llama3-8b"), Catch::Contains("transformer model"));
}

TEST_CASE("gemm suites: fp8 and other dtypes are refused in one line", "[suite]") {
  const SuiteLayer l = gemm_suite_layers(gemm_model("llama3-8b"), {16}).front();
  CHECK(suite_layer_op(l, "fp16") == "gemm_fp16");
  CHECK(suite_layer_op(l, "fp32") == "gemm");
  CHECK_THROWS_WITH(suite_layer_op(l, "fp8"), Catch::Contains("no fp8 templates yet"));
  CHECK_THROWS_WITH(suite_layer_op(l, "int4"), Catch::Contains("unknown dtype 'int4'"));
  CHECK_THROWS_AS(gemm_model("llama2"), TaskError);
}

TEST_CASE("gemm suites: token counts are increasing sizes", "[suite]") {
  CHECK(parse_tokens("1,16,128") == std::vector<int64_t>{1, 16, 128});
  CHECK_THROWS_WITH(parse_tokens("16,1"), Catch::Contains("increasing order"));
  CHECK_THROWS_WITH(parse_tokens("1,1"), Catch::Contains("increasing order"));
  CHECK_THROWS_WITH(parse_tokens("0,4"), Catch::Contains("not in [1,"));
  CHECK_THROWS_WITH(parse_tokens("a"), Catch::Contains("token counts"));
}

TEST_CASE("gemm suites: a model file's rows, and what is wrong with a bad one", "[suite]") {
  const nlohmann::json good = nlohmann::json::parse(R"({"name": "m", "repeat": 3, "gemms": [
      {"name": "up", "n": 48, "k": 40, "dtype": "fp16"}, {"name": "down", "n": 40, "k": 48}]})");
  const GemmModel m = gemm_model_from_json(good, "m.json");
  CHECK(m.repeat == 3);
  const std::vector<SuiteLayer> layers = gemm_suite_layers(m, {1, 7});
  REQUIRE(layers.size() == 4);
  CHECK(layers[1].name == "up.m7");
  CHECK(layers[1].dtype == "fp16");
  CHECK(suite_layer_op(layers[1], "bf16") == "gemm_fp16");  // the row's dtype wins
  CHECK(suite_layer_op(layers[2], "bf16") == "gemm_bf16");
  const auto bad = [](const char* text) {
    return gemm_model_from_json(nlohmann::json::parse(text), "m.json");
  };
  CHECK_THROWS_WITH(bad(R"({"gemms": []})"), Catch::Contains("non-empty \"gemms\""));
  CHECK_THROWS_WITH(bad(R"({"gemms": [{"name": "a", "n": 0, "k": 4}]})"),
                    Catch::Contains("gemms[0]: \"n\" is 0"));
  CHECK_THROWS_WITH(bad(R"({"gemms": [{"name": "a", "n": 4}]})"),
                    Catch::Contains("\"k\" must be an integer"));
  CHECK_THROWS_WITH(bad(R"({"gemms": [{"name": "a", "n": 4, "k": 4}, {"name": "a", "n": 4, "k": 4}]})"),
                    Catch::Contains("a second row a"));
  CHECK_THROWS_WITH(bad(R"({"gemms": [{"name": "a.b", "n": 4, "k": 4}]})"),
                    Catch::Contains("without ','"));
  CHECK_THROWS_WITH(bad(R"({"gemms": [{"name": "a", "n": 4, "k": 4, "dtype": 3}]})"),
                    Catch::Contains("\"dtype\" must be a string"));
}
