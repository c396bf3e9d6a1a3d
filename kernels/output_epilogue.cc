#include "kernels/output_epilogue.h"

#include <fmt/format.h>

#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

namespace {

// A global element as Float32, whatever its storage type.
Expr load_f32(const Buffer& b, const Expr& index) {
  Expr v = Load::make(b, index);
  return b->type.dtype == DType::Float32 ? v : storage_to_f32(v);
}

}  // namespace

OutputEpilogue::OutputEpilogue(Epilogue ep, const Buffer& c, int64_t m, int64_t n, DType input)
    : ep_(std::move(ep)), c_(c), m_(m), n_(n) {
  if (ep_.has(EpilogueOp::bias))
    bias_ = Buffer::make("bias", Type{input, 1}, MemoryScope::global, n, true);
  if (ep_.has(EpilogueOp::residual))
    residual_ = Buffer::make("residual", c->type, MemoryScope::global, m * n, true);
  if (ep_.has(EpilogueOp::alpha)) alpha_ = Var::make(Type::f32(), "alpha");
  if (ep_.has(EpilogueOp::beta)) beta_ = Var::make(Type::f32(), "beta");
}

std::vector<Buffer> OutputEpilogue::buffers() const {
  std::vector<Buffer> out;
  if (bias_.defined()) out.push_back(bias_);
  if (residual_.defined()) out.push_back(residual_);
  return out;
}

std::vector<Expr> OutputEpilogue::scalars() const {
  std::vector<Expr> out;
  if (alpha_.defined()) out.push_back(alpha_);
  if (beta_.defined()) out.push_back(beta_);
  return out;
}

std::vector<TensorSpec> OutputEpilogue::tensors() const {
  std::vector<TensorSpec> out;
  for (const Buffer& b : buffers()) out.push_back({b->name, b->type, b->elements, false});
  return out;
}

std::vector<ScalarSpec> OutputEpilogue::scalar_specs() const {
  std::vector<ScalarSpec> out;
  if (alpha_.defined()) out.push_back({"alpha", Type::f32(), kCheckAlpha});
  if (beta_.defined()) out.push_back({"beta", Type::f32(), kCheckBeta});
  return out;
}

void OutputEpilogue::mark_output(TensorSpec& c) const {
  if (ep_.has(EpilogueOp::beta)) c.initial = true;
}

Expr OutputEpilogue::value(const Expr& acc, const Expr& row, const Expr& col) const {
  EpilogueOperands<Expr> in{alpha_, beta_, Expr(), Expr(), Expr()};
  if (ep_.has(EpilogueOp::beta)) in.c = load_f32(c_, row * i32(n_) + col);
  if (bias_.defined()) in.bias = load_f32(bias_, col);
  if (residual_.defined()) in.residual = load_f32(residual_, row * i32(n_) + col);
  return apply_epilogue(ep_, acc, in);
}

Stmt OutputEpilogue::in_place(const Buffer& acc, const Expr& reg, const Expr& row,
                              const Expr& col) const {
  if (empty()) return Stmt();
  Stmt st = Store::make(acc, reg, value(Load::make(acc, reg), row, col));
  const bool reads = ep_.has(EpilogueOp::beta) || bias_.defined() || residual_.defined();
  return reads ? IfThenElse::make(row < i32(m_) && col < i32(n_), st) : st;
}

void OutputEpilogue::reference(std::vector<float>& out, const std::vector<float>& c_initial,
                               const std::vector<const std::vector<float>*>& extra) const {
  if (empty()) return;
  size_t next = 0;
  const std::vector<float>* bias = bias_.defined() ? extra.at(next++) : nullptr;
  const std::vector<float>* residual = residual_.defined() ? extra.at(next++) : nullptr;
  for (int64_t r = 0; r < m_; ++r) {
    for (int64_t col = 0; col < n_; ++col) {
      const size_t i = size_t(r * n_ + col);
      EpilogueOperands<double> in{kCheckAlpha, kCheckBeta, 0, 0, 0};
      if (ep_.has(EpilogueOp::beta)) in.c = c_initial[i];
      if (bias) in.bias = (*bias)[size_t(col)];
      if (residual) in.residual = (*residual)[i];
      out[i] = float(apply_epilogue<double>(ep_, out[i], in));
    }
  }
}

GemmBaseline OutputEpilogue::baseline(GemmBaseline g, int first_extra) const {
  g.epilogue = ep_.text();
  if (bias_.defined()) g.bias = first_extra;
  if (alpha_.defined()) g.alpha = kCheckAlpha;
  if (beta_.defined()) g.beta = kCheckBeta;
  return g;
}

std::string OutputEpilogue::split_k_reason() const {
  if (ep_.linear()) return "";
  return fmt::format("epilogue {} needs whole sums: no split-K or stream-K (alpha alone can)",
                     ep_.text());
}

}  // namespace cutune
