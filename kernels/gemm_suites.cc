#include "kernels/gemm_suites.h"

#include <algorithm>

#include <fmt/format.h>

#include "kernels/template.h"

namespace cutune {

namespace {

constexpr int64_t kMaxSize = int64_t{1} << 20;

GemmModel llama3_8b() {
  return {"llama3-8b",
          32,
          {{"qkv", 6144, 4096, "", ""},
           {"o", 4096, 4096, "", ""},
           {"gate_up", 28672, 4096, "", ""},
           {"down", 4096, 14336, "", ""}}};
}

int64_t size_field(const nlohmann::json& row, const char* key, const std::string& where) {
  const auto it = row.find(key);
  if (it == row.end() || !it->is_number_integer())
    throw TaskError(fmt::format("{}: \"{}\" must be an integer", where, key));
  const int64_t v = it->get<int64_t>();
  if (v < 1 || v > kMaxSize)
    throw TaskError(fmt::format("{}: \"{}\" is {}, not in [1, {}]", where, key, v, kMaxSize));
  return v;
}

std::string text_field(const nlohmann::json& row, const char* key, const std::string& where) {
  const auto it = row.find(key);
  if (it == row.end()) return "";
  if (!it->is_string()) throw TaskError(fmt::format("{}: \"{}\" must be a string", where, key));
  return it->get<std::string>();
}

}  // namespace

bool is_gemm_suite(const std::string& suite) { return suite == "llama3-8b"; }

GemmModel gemm_model(const std::string& suite) {
  if (suite == "llama3-8b") return llama3_8b();
  throw TaskError(fmt::format("unknown transformer model '{}' (known: llama3-8b)", suite));
}

GemmModel gemm_model_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("gemms") || !j["gemms"].is_array() || j["gemms"].empty())
    throw TaskError(fmt::format("{}: a model is an object with a non-empty \"gemms\" list",
                                source));
  GemmModel model;
  model.name = text_field(j, "name", source);
  if (model.name.empty()) model.name = "model";
  if (j.contains("repeat")) model.repeat = int(size_field(j, "repeat", source));
  for (size_t i = 0; i < j["gemms"].size(); ++i) {
    const nlohmann::json& row = j["gemms"][i];
    const std::string where = fmt::format("{}: gemms[{}]", source, i);
    if (!row.is_object()) throw TaskError(where + " is not an object");
    GemmRow r{text_field(row, "name", where), size_field(row, "n", where),
              size_field(row, "k", where), text_field(row, "dtype", where),
              text_field(row, "epilogue", where)};
    if (r.name.empty() || r.name.find_first_of(",. ") != std::string::npos)
      throw TaskError(where + ": \"name\" must be a non-empty name without ',', '.' or spaces");
    for (const GemmRow& other : model.rows)
      if (other.name == r.name) throw TaskError(fmt::format("{}: a second row {}", where, r.name));
    model.rows.push_back(std::move(r));
  }
  return model;
}

std::vector<int64_t> parse_tokens(const std::string& text) {
  std::vector<int64_t> tokens;
  try {
    tokens = parse_shape(text);
  } catch (const TaskError&) {
    throw TaskError(fmt::format("--tokens '{}': token counts, e.g. 1,16,128", text));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 1 || tokens[i] > kMaxSize)
      throw TaskError(fmt::format("--tokens: {} is not in [1, {}]", tokens[i], kMaxSize));
    if (i > 0 && tokens[i] <= tokens[i - 1])
      throw TaskError(fmt::format("--tokens '{}': give each count once, in increasing order", text));
  }
  return tokens;
}

std::vector<int64_t> default_tokens() { return {1, 16, 128, 1024, 4096}; }

std::vector<SuiteLayer> gemm_suite_layers(const GemmModel& model,
                                          const std::vector<int64_t>& tokens) {
  std::vector<SuiteLayer> out;
  for (const GemmRow& r : model.rows) {
    for (int64_t m : tokens) {
      SuiteLayer l;
      l.name = fmt::format("{}.m{}", r.name, m);
      l.op = "gemm";
      l.shape = {m, r.n, r.k};
      l.repeat = model.repeat;
      l.layout = "nt";
      l.dtype = r.dtype;
      l.epilogue = r.epilogue;
      l.description = fmt::format("{}: M={}, {} -> {}", r.name, m, r.k, r.n);
      out.push_back(std::move(l));
    }
  }
  return out;
}

}  // namespace cutune
