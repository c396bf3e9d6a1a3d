#pragma once
// An epilogue (kernels/epilogue.h) on a row-major M×N output, as the GEMM templates apply it
// (and an NHWC convolution's output, which is [pixels, channels], can): the extra kernel
// parameters it needs, the tensors and scalars a harness passes, the IR that applies it to an
// accumulator in registers, and the reference.
//
// Parameters, after the template's own tensors: bias [N] in the input type, residual [M,N] in
// the output type; then the scalars alpha and beta (Float32). With beta the output C is also
// an input (TensorSpec::initial). A template applies the epilogue in registers, before
// whatever store path it takes (scalar, vector, staged, TMA): in_place() rewrites one
// accumulator of element (row, col). A path that adds into C (split-K atomics) can apply only
// a linear epilogue (alpha): split_k_reason() says so for the space's constraint.

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/epilogue.h"
#include "kernels/template.h"

namespace cutune {

class OutputEpilogue {
 public:
  OutputEpilogue() = default;
  // `c` the output buffer (its type the output's), `input` the inputs' element type.
  OutputEpilogue(Epilogue ep, const ir::Buffer& c, int64_t m, int64_t n, ir::DType input);

  const Epilogue& epilogue() const { return ep_; }
  bool empty() const { return ep_.empty(); }
  // "_ep_bias_gelu" (empty for none): the template name's suffix.
  std::string name_suffix() const { return ep_.name_suffix(); }

  // Appended after the template's tensors, in the kernel's parameter order.
  std::vector<ir::Buffer> buffers() const;
  std::vector<ir::Expr> scalars() const;
  std::vector<TensorSpec> tensors() const;
  std::vector<ScalarSpec> scalar_specs() const;
  // Marks the output TensorSpec as read (initial) where the epilogue has beta.
  void mark_output(TensorSpec& c) const;

  // The epilogue's value for accumulator `acc` (Float32) of element (row, col).
  ir::Expr value(const ir::Expr& acc, const ir::Expr& row, const ir::Expr& col) const;
  // acc[reg] = value(acc[reg], row, col), where (row, col) is inside the output when the
  // epilogue reads memory (else unguarded); an undefined Stmt (which Block::make drops) for none.
  ir::Stmt in_place(const ir::Buffer& acc, const ir::Expr& reg, const ir::Expr& row,
                    const ir::Expr& col) const;

  // The reference: `out` holds the accumulators (M·N, as the GEMM reference wrote them) and,
  // with beta, is replaced by the epilogue's values reading C's initial values from
  // `c_initial`; `extra` are the tensors of tensors(), in order.
  void reference(std::vector<float>& out, const std::vector<float>& c_initial,
                 const std::vector<const std::vector<float>*>& extra) const;

  // `g` with the epilogue (its text, bias index among tensors whose first extra one is
  // `first_extra`, alpha and beta as checked): what the library baseline must compute.
  GemmBaseline baseline(GemmBaseline g, int first_extra) const;

  // Why a configuration that adds partial sums into C (split-K, stream-K) cannot take this
  // epilogue; empty where it can (none, or alpha only).
  std::string split_k_reason() const;

 private:
  Epilogue ep_;
  ir::Buffer c_, bias_, residual_;
  ir::Expr alpha_, beta_;
  int64_t m_ = 0, n_ = 0;
};

}  // namespace cutune
