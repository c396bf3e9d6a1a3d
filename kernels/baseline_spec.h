#pragma once
// What a vendor library computes for a task, as the task's template declares it: the baseline
// that a tuned kernel is compared with in the same harness, and the reference it is checked
// against on the GPU. Plain data: the template knows nothing of cuBLAS or cuDNN; src/baselines
// turns a spec into library calls, and the worker receives it inside its task. Every baseline
// accumulates in fp32 (TF32 off) like the templates.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "kernels/conv_shape.h"
#include "src/ir/type.h"

namespace cutune {

// Row-major C[M,N] = A[M,K]·B, with B stored [K,N], or [N,K] when `b_transposed`.
struct GemmBaseline {
  int64_t m = 0, n = 0, k = 0;
  bool b_transposed = false;
  ir::DType input = ir::DType::Float32;   // A and B
  ir::DType output = ir::DType::Float32;  // C
  int c = 0, a = 1, b = 2;                // the task's tensor indices
  // The task's fused epilogue (kernels/epilogue.h, canonical text; empty: none), the index
  // of its bias tensor (-1: none), and the alpha and beta the baseline runs with (C read
  // where beta is listed). The library says where it cannot express the epilogue.
  std::string epilogue;
  int bias = -1;
  double alpha = 1, beta = 0;
  friend bool operator==(const GemmBaseline&, const GemmBaseline&) = default;
};

// A 2-D convolution in the layouts of kernels/conv_shape.h (NCHW with a KCRS filter, or NHWC
// with an RSCK filter); `shape.depthwise` means one group per channel.
struct ConvBaseline {
  ConvShape shape;
  ConvLayout layout = ConvLayout::nchw;
  ir::DType input = ir::DType::Float32;  // input and filter
  ir::DType output = ir::DType::Float32;
  int output_tensor = 0, input_tensor = 1, filter_tensor = 2;
};

struct BaselineSpec {
  enum class Kind { none, gemm, conv };
  Kind kind = Kind::none;
  GemmBaseline gemm;  // kind gemm
  ConvBaseline conv;  // kind conv

  static BaselineSpec of(GemmBaseline g) { return {Kind::gemm, g, {}}; }
  static BaselineSpec of(ConvBaseline c) { return {Kind::conv, {}, c}; }
  // "cuBLAS", "cuDNN", or "" for none.
  std::string library() const;

  nlohmann::json to_json() const;
  // std::invalid_argument (one line) for a missing field or an unknown kind, layout or type.
  static BaselineSpec from_json(const nlohmann::json& j);
};

}  // namespace cutune
