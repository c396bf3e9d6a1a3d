#pragma once
// A fused epilogue: what a kernel does to each accumulator of its output between the reduction
// and the store, as a task parameter (`--epilogue bias,gelu`). It knows nothing of GEMM: an
// output element has an accumulator, a row and a column, and the ops read the run-time scalars
// alpha and beta, the output's own initial value (C), a vector along the columns (bias, one per
// output channel) and a second input of the output's shape (residual). Templates (GEMM now,
// convolutions later) decide where those live and apply the one function below.
//
//   out = act(alpha·acc + beta·C + bias) + residual,   then cast to the output's type
//
// each term present only where its op is listed: cuBLASLt's order (alpha/beta, bias, then the
// activation) with the residual added after the activation, as a transformer block's skip
// connection is. The ops' order in the text is free; the canonical text lists them in the
// order of EpilogueOp. At most one activation.
//
// apply_epilogue() is written once over a value type: the CPU reference evaluates it in double,
// the templates build their IR expression with it (ir::Expr, fp32 math: erff, tanhf, expf), so
// the two cannot compute different things.

#include <optional>
#include <string>
#include <vector>

#include "src/ir/ir.h"

namespace cutune {

enum class EpilogueOp { alpha, beta, bias, relu, gelu, gelu_tanh, silu, residual };

struct Epilogue {
  std::vector<EpilogueOp> ops;  // canonical: in enum order, each at most once

  bool empty() const { return ops.empty(); }
  bool has(EpilogueOp op) const;
  std::optional<EpilogueOp> activation() const;
  // Whether the epilogue is linear in the accumulator with nothing added (none, or alpha
  // only): the only epilogues a kernel that adds partial sums into C (split-K) can apply.
  bool linear() const;
  // "alpha,bias,gelu"; empty for none.
  std::string text() const;
  // "_ep_alpha_bias_gelu" for template names; empty for none.
  std::string name_suffix() const;
};

// Parses a comma-separated list of ops; empty text is no epilogue. TaskError (one line) for an
// unknown op ("unknown epilogue op 'gleu' (known: alpha, ...)"), a repeated op or two
// activations.
Epilogue parse_epilogue(const std::string& text);
// parse_epilogue(text).text(): the form TaskParams::epilogue holds.
std::string canonical_epilogue(const std::string& text);
// "alpha, beta, bias, relu, gelu, gelu_tanh, silu, residual".
std::string epilogue_ops_help();

// The values a check passes for alpha and beta: the kernel takes them at run time, so any
// values serve; these make a missing, doubled or swapped scale show.
inline constexpr double kCheckAlpha = 0.5;
inline constexpr double kCheckBeta = -1.25;

// The operands of one output element (those its epilogue does not use are ignored).
template <class V>
struct EpilogueOperands {
  V alpha, beta, c, bias, residual;
};

// The arithmetic apply_epilogue needs, for double (the reference) and ir::Expr (codegen, fp32).
template <class V>
struct EpilogueMath;
template <>
struct EpilogueMath<double> {
  static double constant(double v) { return v; }
  static double erf(double x);
  static double tanh(double x);
  static double exp(double x);
  static double max0(double x) { return x > 0 ? x : 0; }
};
template <>
struct EpilogueMath<ir::Expr> {
  static ir::Expr constant(double v);
  static ir::Expr erf(const ir::Expr& x);
  static ir::Expr tanh(const ir::Expr& x);
  static ir::Expr exp(const ir::Expr& x);
  static ir::Expr max0(const ir::Expr& x);
};

template <class V>
V apply_activation(EpilogueOp act, const V& x) {
  using M = EpilogueMath<V>;
  switch (act) {
    case EpilogueOp::relu:
      return M::max0(x);
    case EpilogueOp::gelu:  // x·Φ(x), Φ by erf
      return M::constant(0.5) * x * (M::constant(1.0) + M::erf(x * M::constant(0.7071067811865476)));
    case EpilogueOp::gelu_tanh: {  // the tanh approximation (cuBLASLt's GELU)
      const V inner = M::constant(0.7978845608028654) * (x + M::constant(0.044715) * x * x * x);
      return M::constant(0.5) * x * (M::constant(1.0) + M::tanh(inner));
    }
    case EpilogueOp::silu:  // x·σ(x)
      return x / (M::constant(1.0) + M::exp(-x));
    default:
      return x;
  }
}

template <class V>
V apply_epilogue(const Epilogue& ep, const V& acc, const EpilogueOperands<V>& in) {
  V x = ep.has(EpilogueOp::alpha) ? in.alpha * acc : acc;
  if (ep.has(EpilogueOp::beta)) x = x + in.beta * in.c;
  if (ep.has(EpilogueOp::bias)) x = x + in.bias;
  if (std::optional<EpilogueOp> act = ep.activation()) x = apply_activation(*act, x);
  if (ep.has(EpilogueOp::residual)) x = x + in.residual;
  return x;
}

}  // namespace cutune
