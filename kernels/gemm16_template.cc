#include "kernels/gemm16_template.h"

#include <fmt/format.h>

#include "kernels/schedule_helpers.h"

namespace cutune {

using namespace ir;

Gemm16Template::Gemm16Template(int64_t m, int64_t n, int64_t k, GemmLayout layout, DType input,
                               bool out16, const char* kind)
    : m_(m), n_(n), k_(k), layout_(layout), input_(input), out16_(out16) {
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
  c.zero_init = !out16_;  // split-K configurations add into it
  return {c, {"A", in, m_ * k_, false}, {"B", in, k_ * n_, false}};
}

void Gemm16Template::reference(std::vector<std::vector<float>>& t) const {
  reference_gemm(t[1], t[2], t[0], m_, n_, k_, /*b_transposed=*/layout_ == GemmLayout::nt);
}

BaselineSpec Gemm16Template::baseline() const {
  return BaselineSpec::of(GemmBaseline{m_, n_, k_, layout_ == GemmLayout::nt, input_,
                                       out16_ ? input_ : DType::Float32});
}

}  // namespace cutune
