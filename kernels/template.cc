#include "kernels/template.h"

#include <charconv>

#include <fmt/format.h>

#include "kernels/epilogue.h"

namespace cutune {

std::vector<TaskParams> combinations(const std::string& computation, const std::string& family,
                                     const std::vector<std::string>& dtypes,
                                     const std::vector<std::string>& layouts, bool narrow_out) {
  std::vector<TaskParams> out;
  for (const std::string& dtype : dtypes) {
    std::vector<std::string> outs = {"fp32"};
    if (narrow_out && dtype != "fp32") outs.push_back(dtype);
    for (const std::string& out_dtype : outs) {
      for (const std::string& layout : layouts)
        out.push_back({computation, dtype, out_dtype, layout, family});
    }
  }
  return out;
}

std::string operator_name(const TaskParams& p) {
  return p.dtype == "fp32" ? p.computation : p.computation + "_" + p.dtype;
}

namespace {
constexpr const char* kRuntimeMSuffix = "_dynm";
}  // namespace

std::string template_name(const TaskParams& p) {
  // The family each dtype had alone before (FMA for fp32, mma.sync for 16 bits) goes unnamed.
  const bool first_family = p.family == (p.dtype == "fp32" ? "simt" : "mma");
  std::string out = operator_name(p) + (first_family ? "" : "_" + p.family) + "_" + p.layout;
  if (p.out_dtype == p.dtype && p.dtype != "fp32") {
    out += "_out16";
  } else if (p.out_dtype != "fp32") {
    out += "_out_" + p.out_dtype;
  }
  out += parse_epilogue(p.epilogue).name_suffix();
  return p.runtime_m ? out + kRuntimeMSuffix : out;
}

GemmLayout gemm_layout(const std::string& layout) {
  CUTUNE_CHECK(layout == "nn" || layout == "nt", "GEMM layout " + layout);
  return layout == "nn" ? GemmLayout::nn : GemmLayout::nt;
}

ir::DType element_type(const std::string& dtype) {
  if (dtype == "fp16") return ir::DType::Float16;
  if (dtype == "bf16") return ir::DType::BFloat16;
  CUTUNE_CHECK(dtype == "fp32", "element type " + dtype);
  return ir::DType::Float32;
}

std::vector<int64_t> shape_of_size(const std::string& op, const std::vector<int64_t>& shape,
                                   size_t sizes, const char* help) {
  if (shape.size() != sizes) {
    throw TaskError(
        fmt::format("{} takes a shape {} ({} sizes), got {} sizes", op, help, sizes, shape.size()));
  }
  return shape;
}

void check_gemm_shape(const std::string& op, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  if (m < 1 || n < 1 || k < 1) {
    throw TaskError(fmt::format("{} needs M, N, K >= 1, got {},{},{}", op, m, n, k));
  }
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim || m * k >= INT32_MAX || k * n >= INT32_MAX ||
      m * n >= INT32_MAX) {
    throw TaskError(fmt::format(
        "{} {}x{}x{} is too large: each size at most 2^20 and each matrix under 2^31 elements", op,
        m, n, k));
  }
}

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find_first_of(",x", pos);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(pos, end - pos);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size()) {
      throw TaskError(
          fmt::format("bad shape '{}': expected positive integers separated by commas", text));
    }
    if (v < 0) throw TaskError(fmt::format("bad shape '{}': sizes must not be negative", text));
    out.push_back(v);
    pos = end + 1;
  }
  return out;
}

}  // namespace cutune
