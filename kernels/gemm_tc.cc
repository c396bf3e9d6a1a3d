#include "kernels/schedule_helpers.h"
#include "kernels/gemm_tc.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/tc_blocks.h"

namespace cutune {

using namespace ir;

GemmTcTemplate::GemmTcTemplate(int64_t m, int64_t n, int64_t k, GemmLayout layout, DType input,
                               bool out16, Epilogue epilogue)
    : Gemm16Template(m, n, k, layout, input, out16, "a tensor-core GEMM", std::move(epilogue)) {
  define_space();
}

std::string GemmTcTemplate::name() const {
  return op() + name_tail();
}

void GemmTcTemplate::define_space() {
  tc::define_tc_knobs(space_);
  bool nn = layout_ == GemmLayout::nn;
  int64_t n = n_, k = k_;
  space_.add_constraint("copies keep global rows aligned", [nn, n, k](const Config& c) {
    int64_t e = c.get("copy_bytes") / 2;
    return k % e == 0 && (!nn || n % e == 0);
  });
  tc::add_tc_shape_constraints(space_, nn, n_, k_, out16_);
  constrain_epilogue([](const Config& c) { return c.get("split_k") > 1; });
}

std::vector<Config> GemmTcTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) { add_if_valid(space_, std::move(knobs), out); };
  // The usual Ampere-style mma.sync kernel: 128x128x32 blocks of 4 warps of 64x64, a
  // 4-stage cp.async ring of swizzled 16-byte chunks, ldmatrix fragments, grouped blocks.
  add(tc::ring_knobs(128, 128, 64, 64, 4, 8));
  // Smaller tiles for small or skinny problems.
  add(tc::ring_knobs(64, 64, 32, 32, 3, 4));
  return out;
}

std::vector<std::string> GemmTcTemplate::loop_names() const { return tc::tc_loop_names(); }

std::vector<std::string> GemmTcTemplate::buffer_names() const {
  std::vector<std::string> names = {"A", "B", "C"};
  for (std::string& b : tc::tc_local_buffer_names()) names.push_back(std::move(b));
  return names;
}

Kernel GemmTcTemplate::build(const Config& config) const {
  const tc::TcParams p = tc::tc_params(config);
  const bool nn = layout_ == GemmLayout::nn;
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
  spec.c = c_buffer();
  spec.epilogue = output_epilogue(spec.c);
  spec.parameters = {spec.c, spec.a.global, spec.b.global};
  for (const Buffer& b : spec.epilogue.buffers()) spec.parameters.push_back(b);
  return tc::build_tc_gemm(spec, p);
}

namespace {

const FamilyRegistrar kGemmMma{
    {.computation = "gemm",
     .family = "mma",
     .shape_help = "M,N,K",
     .description = "C[M,N] = A[M,K]·B on mma.sync tensor cores with fp32 accumulation: 16-bit "
                    "inputs, B [K,N] (nn) or stored [N,K] (nt); C fp32 or like the inputs",
     .native_arch = kAnyArch,
     .supported = combinations("gemm", "mma", {"fp16", "bf16"}, {"nn", "nt"}, true),
     .epilogue = true,
     .make = [](const TaskParams& p,
                const std::vector<int64_t>& shape) -> std::unique_ptr<Template> {
       const std::vector<int64_t> s = shape_of_size(operator_name(p), shape, 3, "M,N,K");
       return std::make_unique<GemmTcTemplate>(s[0], s[1], s[2], gemm_layout(p.layout),
                                               element_type(p.dtype), p.out_dtype != "fp32",
                                               parse_epilogue(p.epilogue));
     }}};

}  // namespace

}  // namespace cutune
