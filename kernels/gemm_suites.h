#pragma once
// The GEMMs of transformer models as tune-suite layers: a model's distinct products (N, K, the
// epilogue the layer fuses), each at every token count M the user runs (1 to 16 while decoding,
// thousands while prefilling). Weights are stored [N, K], as dense layers keep them, so the
// layers are GEMMs of layout nt.
//
// llama3-8b: the four products of a Llama 3 8B decoder layer (hidden 4096, 32 query and 8
//   key/value heads of 128, MLP 14336), 32 layers: qkv 4096 -> 6144, o 4096 -> 4096,
//   gate_up 4096 -> 28672 (gate and up in one GEMM), down 14336 -> 4096.
// A model file (tune-suite --model FILE) lists any other model's rows as JSON:
//   {"name": "my-model", "repeat": 24,
//    "gemms": [{"name": "qkv", "n": 3072, "k": 1024, "dtype": "bf16", "epilogue": ""}, ...]}
// ("dtype" and "epilogue" optional: the suite's --dtype, none; "repeat" optional: 1).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/layer_suites.h"

namespace cutune {

struct GemmRow {
  std::string name;  // "qkv"
  int64_t n = 0, k = 0;
  std::string dtype;     // empty: the suite's
  std::string epilogue;  // empty: none
};

struct GemmModel {
  std::string name;
  int repeat = 1;  // how many times the model runs each row (its layers)
  std::vector<GemmRow> rows;
};

// Whether `suite` names a built-in transformer model.
bool is_gemm_suite(const std::string& suite);
// The built-in model `suite`; TaskError for an unknown one.
GemmModel gemm_model(const std::string& suite);
// A model file's model; TaskError (one line naming `source` and the row) for a malformed one.
GemmModel gemm_model_from_json(const nlohmann::json& j, const std::string& source);

// Token counts as tune-suite takes them ("1,16,128"): each in [1, 2^20], no repeats, in
// increasing order; TaskError otherwise.
std::vector<int64_t> parse_tokens(const std::string& text);
// The default token counts: decoding (1, 16) and prefilling (128, 1024, 4096).
std::vector<int64_t> default_tokens();

// Every row at every token count, row by row ("qkv.m16": M=16), op gemm, layout nt.
std::vector<SuiteLayer> gemm_suite_layers(const GemmModel& model,
                                          const std::vector<int64_t>& tokens);

}  // namespace cutune
