#include "kernels/gemm16_template.h"

#include <fmt/format.h>

#include "kernels/schedule_helpers.h"

namespace cutune {

using namespace ir;

Gemm16Template::Gemm16Template(int64_t m, int64_t n, int64_t k, GemmLayout layout, DType input,
                               bool out16, const char* kind, Epilogue epilogue)
    : m_(m),
      n_(n),
      k_(k),
      layout_(layout),
      input_(input),
      out16_(out16),
      epilogue_(std::move(epilogue)) {
  if (input != DType::Float16 && input != DType::BFloat16) {
    throw TaskError(fmt::format("{} takes fp16 or bf16 inputs", kind));
  }
  check_gemm_shape(op(), m, n, k);
}

std::string Gemm16Template::op() const {
  return input_ == DType::Float16 ? "gemm_fp16" : "gemm_bf16";
}

std::vector<TensorSpec> Gemm16Template::tensors() const {
  Type in{input_, 1};
  TensorSpec c{"C", out16_ ? in : Type::f32(), m_ * n_, true};
  const OutputEpilogue ep = output_epilogue(c_buffer());
  ep.mark_output(c);
  c.zero_init = !out16_ && !c.initial;  // split-K configurations add into it
  std::vector<TensorSpec> out = {c, {"A", in, m_ * k_, false}, {"B", in, k_ * n_, false}};
  for (TensorSpec& t : ep.tensors()) out.push_back(std::move(t));
  return out;
}

std::vector<ScalarSpec> Gemm16Template::scalars() const {
  return output_epilogue(c_buffer()).scalar_specs();
}

void Gemm16Template::reference(std::vector<std::vector<float>>& t) const {
  const std::vector<float> c_initial = epilogue_.has(EpilogueOp::beta) ? t[0] : std::vector<float>{};
  reference_gemm(t[1], t[2], t[0], m_, n_, k_, /*b_transposed=*/layout_ == GemmLayout::nt);
  std::vector<const std::vector<float>*> extra;
  for (size_t i = 3; i < t.size(); ++i) extra.push_back(&t[i]);
  output_epilogue(c_buffer()).reference(t[0], c_initial, extra);
}

Buffer Gemm16Template::c_buffer() const {
  return Buffer::make("C", out16_ ? Type{input_, 1} : Type::f32(), MemoryScope::global, m_ * n_);
}

OutputEpilogue Gemm16Template::output_epilogue(const Buffer& c) const {
  return OutputEpilogue(epilogue_, c, m_, n_, input_);
}

std::string Gemm16Template::name_tail() const {
  return std::string(layout_ == GemmLayout::nn ? "_nn" : "_nt") + (out16_ ? "_out16" : "") +
         epilogue_.name_suffix();
}

void Gemm16Template::constrain_epilogue(std::function<bool(const Config&)> adds_into_c) {
  const std::string why = output_epilogue(c_buffer()).split_k_reason();
  if (why.empty()) return;
  space_.add_constraint(why, [adds_into_c](const Config& c) { return !adds_into_c(c); });
}

BaselineSpec Gemm16Template::baseline() const {
  GemmBaseline g;
  g.m = m_, g.n = n_, g.k = k_;
  g.b_transposed = layout_ == GemmLayout::nt;
  g.input = input_;
  g.output = out16_ ? input_ : DType::Float32;
  return BaselineSpec::of(output_epilogue(c_buffer()).baseline(g, 3));
}

}  // namespace cutune
