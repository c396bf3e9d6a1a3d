#pragma once
// What the 16-bit-input GEMM templates (gemm_tc.h on mma.sync, gemm_wgmma.h on wgmma) share:
// the operator (gemm_fp16 or gemm_bf16), the shape and its checks, the tensors C [M,N] (fp32,
// zeroed for split-K, or the input type when out16), A [M,K] and B ([K,N] for nn, [N,K] for
// nt) in the input type, the CPU reference, and the cuBLAS baseline; and the fused epilogue
// (kernels/output_epilogue.h): its tensors after A and B, its scalars, its reference, and the
// space constraint that keeps it off split-K.

#include "kernels/output_epilogue.h"
#include "kernels/template.h"

namespace cutune {

class Gemm16Template : public Template {
 public:
  std::string op() const override;
  std::vector<int64_t> shape() const override { return {m_, n_, k_}; }
  const ConfigSpace& space() const override { return space_; }
  std::vector<TensorSpec> tensors() const override;
  std::vector<ScalarSpec> scalars() const override;
  // Inputs are taken as given (the caller has rounded them to the input type).
  void reference(std::vector<std::vector<float>>& tensors) const override;
  double flops() const override { return 2.0 * double(m_) * double(n_) * double(k_); }
  int64_t reduction_length() const override { return k_; }
  BaselineSpec baseline() const override;
  std::optional<int64_t> runtime_m() const override {
    return runtime_m_ ? std::optional<int64_t>(m_) : std::nullopt;
  }

 protected:
  // input: Float16 or BFloat16, else TaskError naming `kind` ("a tensor-core GEMM").
  Gemm16Template(int64_t m, int64_t n, int64_t k, GemmLayout layout, ir::DType input, bool out16,
                 const char* kind, Epilogue epilogue);

  // The output buffer C of a kernel, and the epilogue on it.
  ir::Buffer c_buffer() const;
  OutputEpilogue output_epilogue(const ir::Buffer& c) const;
  // "_nt_out16" plus the epilogue's suffix: the name after the family's part.
  std::string name_tail() const;
  // The constraint that a non-linear epilogue takes no configuration that adds partial sums
  // into C (split-K, stream-K): those `adds_into_c` says do.
  void constrain_epilogue(std::function<bool(const Config&)> adds_into_c);

  int64_t m_, n_, k_;
  GemmLayout layout_;
  ir::DType input_;
  bool out16_;
  bool runtime_m_ = false;  // TaskParams::runtime_m: the kernels take M as a scalar
  Epilogue epilogue_;
  ConfigSpace space_;
};

}  // namespace cutune
