#include "kernels/epilogue.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernels/template.h"
#include "src/ir/ir_operators.h"

namespace cutune {

namespace {

struct OpName {
  EpilogueOp op;
  const char* name;
};
// In EpilogueOp's order: the canonical text lists the ops so.
constexpr OpName kOps[] = {{EpilogueOp::alpha, "alpha"},         {EpilogueOp::beta, "beta"},
                           {EpilogueOp::bias, "bias"},           {EpilogueOp::relu, "relu"},
                           {EpilogueOp::gelu, "gelu"},           {EpilogueOp::gelu_tanh, "gelu_tanh"},
                           {EpilogueOp::silu, "silu"},           {EpilogueOp::residual, "residual"}};

const char* name_of(EpilogueOp op) {
  for (const OpName& o : kOps)
    if (o.op == op) return o.name;
  return "?";
}

bool is_activation(EpilogueOp op) {
  return op == EpilogueOp::relu || op == EpilogueOp::gelu || op == EpilogueOp::gelu_tanh ||
         op == EpilogueOp::silu;
}

std::string joined(const Epilogue& ep, const char* sep) {
  std::string out;
  for (EpilogueOp op : ep.ops) out += (out.empty() ? "" : sep) + std::string(name_of(op));
  return out;
}

}  // namespace

bool Epilogue::has(EpilogueOp op) const {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

std::optional<EpilogueOp> Epilogue::activation() const {
  for (EpilogueOp op : ops)
    if (is_activation(op)) return op;
  return std::nullopt;
}

bool Epilogue::linear() const {
  return std::all_of(ops.begin(), ops.end(), [](EpilogueOp op) { return op == EpilogueOp::alpha; });
}

std::string Epilogue::text() const { return joined(*this, ","); }

std::string Epilogue::name_suffix() const { return empty() ? "" : "_ep_" + joined(*this, "_"); }

std::string epilogue_ops_help() {
  std::string out;
  for (const OpName& o : kOps) out += (out.empty() ? "" : ", ") + std::string(o.name);
  return out;
}

Epilogue parse_epilogue(const std::string& text) {
  Epilogue ep;
  if (text.empty()) return ep;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    pos = end + 1;
    const OpName* o = std::find_if(std::begin(kOps), std::end(kOps),
                                   [&](const OpName& x) { return word == x.name; });
    if (o == std::end(kOps)) {
      throw TaskError(fmt::format("unknown epilogue op '{}' in '{}' (known: {})", word, text,
                                  epilogue_ops_help()));
    }
    if (ep.has(o->op)) throw TaskError(fmt::format("epilogue '{}' lists {} twice", text, word));
    if (is_activation(o->op) && ep.activation()) {
      throw TaskError(fmt::format("epilogue '{}' has two activations ({} and {}): at most one",
                                  text, name_of(*ep.activation()), word));
    }
    ep.ops.push_back(o->op);
  }
  std::sort(ep.ops.begin(), ep.ops.end());
  return ep;
}

std::string canonical_epilogue(const std::string& text) { return parse_epilogue(text).text(); }

double EpilogueMath<double>::erf(double x) { return std::erf(x); }
double EpilogueMath<double>::tanh(double x) { return std::tanh(x); }
double EpilogueMath<double>::exp(double x) { return std::exp(x); }

ir::Expr EpilogueMath<ir::Expr>::constant(double v) { return ir::f32(v); }
ir::Expr EpilogueMath<ir::Expr>::erf(const ir::Expr& x) {
  return ir::Call::make(ir::Type::f32(), "erff", {x});
}
ir::Expr EpilogueMath<ir::Expr>::tanh(const ir::Expr& x) {
  return ir::Call::make(ir::Type::f32(), "tanhf", {x});
}
ir::Expr EpilogueMath<ir::Expr>::exp(const ir::Expr& x) {
  return ir::Call::make(ir::Type::f32(), "expf", {x});
}
ir::Expr EpilogueMath<ir::Expr>::max0(const ir::Expr& x) { return ir::max(x, ir::f32(0.0)); }

}  // namespace cutune
