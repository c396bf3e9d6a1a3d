#include "kernels/schedule_helpers.h"
#include "kernels/gemm_tc.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/tc_blocks.h"

namespace cutune {

using namespace ir;

GemmTcTemplate::GemmTcTemplate(int64_t m, int64_t n, int64_t k, TcLayout layout, DType input,
                               bool out16)
    : m_(m), n_(n), k_(k), layout_(layout), input_(input), out16_(out16) {
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  if (input != DType::Float16 && input != DType::BFloat16) {
    throw TaskError("a tensor-core GEMM takes fp16 or bf16 inputs");
  }
  if (m < 1 || n < 1 || k < 1) {
    throw TaskError(fmt::format("{} needs M, N, K >= 1, got {},{},{}", op(), m, n, k));
  }
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim || m * k >= INT32_MAX || k * n >= INT32_MAX ||
      m * n >= INT32_MAX) {
    throw TaskError(
        fmt::format("{} {}x{}x{} is too large: each matrix must have fewer than "
                    "2^31 elements",
                    op(), m, n, k));
  }
  define_space();
}

std::string GemmTcTemplate::op() const {
  return input_ == DType::Float16 ? "gemm_fp16" : "gemm_bf16";
}

std::string GemmTcTemplate::name() const {
  return op() + (layout_ == TcLayout::nn ? "_nn" : "_nt") + (out16_ ? "_out16" : "");
}

std::vector<std::string> GemmTcTemplate::template_names(const std::string& op) {
  return {op + "_nn", op + "_nt", op + "_nn_out16", op + "_nt_out16"};
}

void GemmTcTemplate::define_space() {
  tc::define_tc_knobs(space_);
  bool nn = layout_ == TcLayout::nn;
  int64_t n = n_, k = k_;
  space_.add_constraint("copies keep global rows aligned", [nn, n, k](const Config& c) {
    int64_t e = c.get("copy_bytes") / 2;
    return k % e == 0 && (!nn || n % e == 0);
  });
  tc::add_tc_shape_constraints(space_, nn, n_, k_, out16_);
}

std::vector<Config> GemmTcTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) { add_if_valid(space_, std::move(knobs), out); };
  // The usual Ampere-style mma.sync kernel: 128x128x32 blocks of 4 warps of 64x64, a
  // 4-stage cp.async ring of swizzled 16-byte chunks, ldmatrix fragments, grouped blocks.
  add({{"block_m", 128},
       {"block_n", 128},
       {"block_k", 32},
       {"warp_m", 64},
       {"warp_n", 64},
       {"stages", 4},
       {"smem_layout", 2},
       {"copy_bytes", 16},
       {"ldmatrix", 1},
       {"raster_group", 8},
       {"split_k", 1},
       {"epilogue_vec", 2}});
  // Smaller tiles for small or skinny problems.
  add({{"block_m", 64},
       {"block_n", 64},
       {"block_k", 32},
       {"warp_m", 32},
       {"warp_n", 32},
       {"stages", 3},
       {"smem_layout", 2},
       {"copy_bytes", 16},
       {"ldmatrix", 1},
       {"raster_group", 4},
       {"split_k", 1},
       {"epilogue_vec", 2}});
  return out;
}

std::vector<std::string> GemmTcTemplate::loop_names() const { return tc::tc_loop_names(); }

std::vector<std::string> GemmTcTemplate::buffer_names() const {
  std::vector<std::string> names = {"A", "B", "C"};
  for (std::string& b : tc::tc_local_buffer_names()) names.push_back(std::move(b));
  return names;
}

std::vector<TensorSpec> GemmTcTemplate::tensors() const {
  Type in{input_, 1};
  TensorSpec c{"C", out16_ ? in : Type::f32(), m_ * n_, true};
  c.zero_init = !out16_;  // split-K configurations add into it
  return {c, {"A", in, m_ * k_, false}, {"B", in, k_ * n_, false}};
}

void GemmTcTemplate::reference(std::vector<std::vector<float>>& t) const {
  reference_gemm(t[1], t[2], t[0], m_, n_, k_, /*b_transposed=*/layout_ != TcLayout::nn);
}

Kernel GemmTcTemplate::build(const Config& config) const {
  const tc::TcParams p = tc::tc_params(config);
  const bool nn = layout_ == TcLayout::nn;
  const int elems = p.copy_bytes / 2;
  const Type in{input_, 1};
  const bool k_tail = k_ % p.bk != 0;
  tc::TcGemmSpec spec;
  spec.name = name();
  spec.m = m_, spec.n = n_, spec.k = k_;
  spec.input = input_;
  spec.out16 = out16_;
  spec.b_k_major = nn;
  spec.a = {Buffer::make("A", in, MemoryScope::global, m_ * k_, true), elems,
            tc::matrix_source(k_, m_, k_, m_ % p.bm != 0, k_tail)};
  spec.b = {Buffer::make("B", in, MemoryScope::global, k_ * n_, true), elems,
            nn ? tc::matrix_source(n_, k_, n_, k_tail, n_ % p.bn != 0)
               : tc::matrix_source(k_, n_, k_, n_ % p.bn != 0, k_tail)};
  spec.c = Buffer::make("C", out16_ ? in : Type::f32(), MemoryScope::global, m_ * n_);
  spec.parameters = {spec.c, spec.a.global, spec.b.global};
  return tc::build_tc_gemm(spec, p);
}

namespace {

// One registrar per operator (gemm_fp16, gemm_bf16) and template (_nn, _nt, _nn_out16, _nt_out16).
struct TcGemmRegistrars {
  std::vector<TemplateRegistrar> all;
  TcGemmRegistrars() {
    for (const char* op : {"gemm_fp16", "gemm_bf16"}) {
      const std::string in = std::string(op) == "gemm_fp16" ? "fp16" : "bf16";
      const std::string description = fmt::format(
          "tensor-core C[M,N] = A[M,K]·B with {} inputs and fp32 accumulation; B [K,N] (_nn) or "
          "[N,K] (_nt); C fp32, or {} for the _out16 templates",
          in, in);
      const ir::DType input = in == "fp16" ? ir::DType::Float16 : ir::DType::BFloat16;
      for (const std::string& name : GemmTcTemplate::template_names(op)) {
        const TcLayout layout = name.find("_nt") != std::string::npos ? TcLayout::nt : TcLayout::nn;
        const bool out16 = name.ends_with("_out16");
        all.emplace_back(TemplateEntry{
            op, name, "M,N,K", description, name == std::string(op) + "_nn",
            [op = std::string(op), layout, input, out16](const std::vector<int64_t>& shape) {
              const std::vector<int64_t> s = shape_of_size(op, shape, 3, "M,N,K");
              return std::unique_ptr<Template>(
                  std::make_unique<GemmTcTemplate>(s[0], s[1], s[2], layout, input, out16));
            }});
      }
    }
  }
};
const TcGemmRegistrars kTcGemmRegistrars;

}  // namespace

}  // namespace cutune
