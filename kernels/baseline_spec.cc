#include "kernels/baseline_spec.h"

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cutune {

namespace {

std::string type_name(ir::DType t) {
  if (t != ir::DType::Float32 && t != ir::DType::Float16 && t != ir::DType::BFloat16)
    throw std::invalid_argument("a baseline's tensors are float32, float16 or bfloat16");
  return ir::dtype_name(t);
}

ir::DType parse_type(const nlohmann::json& j, const char* key) {
  const std::string name = j.at(key).get<std::string>();
  if (name == "float32") return ir::DType::Float32;
  if (name == "float16") return ir::DType::Float16;
  if (name == "bfloat16") return ir::DType::BFloat16;
  throw std::invalid_argument(
      fmt::format("baseline: unknown {} '{}' (known: float32, float16, bfloat16)", key, name));
}

}  // namespace

std::string BaselineSpec::library() const {
  switch (kind) {
    case Kind::gemm:
      return "cuBLAS";
    case Kind::conv:
      return "cuDNN";
    case Kind::none:
      break;
  }
  return "";
}

nlohmann::json BaselineSpec::to_json() const {
  if (kind == Kind::gemm) {
    const GemmBaseline& g = gemm;
    nlohmann::json out = {{"kind", "gemm"},
                          {"m", g.m},
                          {"n", g.n},
                          {"k", g.k},
                          {"b_transposed", g.b_transposed},
                          {"input", type_name(g.input)},
                          {"output", type_name(g.output)},
                          {"c", g.c},
                          {"a", g.a},
                          {"b", g.b}};
    if (!g.epilogue.empty()) {  // absent without one, as before epilogues
      out["epilogue"] = g.epilogue;
      out["bias"] = g.bias;
      out["alpha"] = g.alpha;
      out["beta"] = g.beta;
    }
    return out;
  }
  if (kind == Kind::conv) {
    const ConvShape& s = conv.shape;
    return {{"kind", "conv"},
            {"n", s.n},
            {"c", s.c},
            {"h", s.h},
            {"w", s.w},
            {"k", s.k},
            {"r", s.r},
            {"s", s.s},
            {"stride", s.stride},
            {"pad", s.pad},
            {"dilation", s.dilation},
            {"p", s.p},
            {"q", s.q},
            {"depthwise", s.depthwise},
            {"layout", conv.layout == ConvLayout::nchw ? "nchw" : "nhwc"},
            {"input", type_name(conv.input)},
            {"output", type_name(conv.output)},
            {"output_tensor", conv.output_tensor},
            {"input_tensor", conv.input_tensor},
            {"filter_tensor", conv.filter_tensor}};
  }
  return {{"kind", "none"}};
}

BaselineSpec BaselineSpec::from_json(const nlohmann::json& j) {
  try {
    const std::string kind = j.at("kind").get<std::string>();
    if (kind == "none") return {};
    if (kind == "gemm") {
      GemmBaseline g;
      g.m = j.at("m").get<int64_t>();
      g.n = j.at("n").get<int64_t>();
      g.k = j.at("k").get<int64_t>();
      g.b_transposed = j.at("b_transposed").get<bool>();
      g.input = parse_type(j, "input");
      g.output = parse_type(j, "output");
      g.c = j.at("c").get<int>();
      g.a = j.at("a").get<int>();
      g.b = j.at("b").get<int>();
      g.epilogue = j.value("epilogue", std::string());
      g.bias = j.value("bias", -1);
      g.alpha = j.value("alpha", 1.0);
      g.beta = j.value("beta", 0.0);
      return of(g);
    }
    if (kind == "conv") {
      ConvBaseline c;
      ConvShape& s = c.shape;
      s.n = j.at("n").get<int64_t>();
      s.c = j.at("c").get<int64_t>();
      s.h = j.at("h").get<int64_t>();
      s.w = j.at("w").get<int64_t>();
      s.k = j.at("k").get<int64_t>();
      s.r = j.at("r").get<int64_t>();
      s.s = j.at("s").get<int64_t>();
      s.stride = j.at("stride").get<int64_t>();
      s.pad = j.at("pad").get<int64_t>();
      s.dilation = j.at("dilation").get<int64_t>();
      s.p = j.at("p").get<int64_t>();
      s.q = j.at("q").get<int64_t>();
      s.depthwise = j.at("depthwise").get<bool>();
      const std::string layout = j.at("layout").get<std::string>();
      if (layout != "nchw" && layout != "nhwc")
        throw std::invalid_argument(
            fmt::format("baseline: unknown layout '{}' (known: nchw, nhwc)", layout));
      c.layout = layout == "nchw" ? ConvLayout::nchw : ConvLayout::nhwc;
      c.input = parse_type(j, "input");
      c.output = parse_type(j, "output");
      c.output_tensor = j.at("output_tensor").get<int>();
      c.input_tensor = j.at("input_tensor").get<int>();
      c.filter_tensor = j.at("filter_tensor").get<int>();
      return of(c);
    }
    throw std::invalid_argument(
        fmt::format("baseline: unknown kind '{}' (known: none, gemm, conv)", kind));
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("baseline: {}", e.what()));
  }
}

}  // namespace cutune
