#include "src/codegen/cuda_intrinsics_hopper.h"

#include <regex>

#include <fmt/format.h>

namespace cutune {

namespace {

// wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T (PTX ISA, "Asynchronous Warpgroup Level
// Matrix Multiply-Accumulate"): the N/2 accumulators are read-write operands; scale-d is a
// predicate set from the Int32 argument (0: d = a·b, else d = a·b + d); imm-scale-a/b are 1;
// imm-trans-a/b (16-bit types only) select MN-major shared-memory operands.
std::string wgmma(const std::string& name, int n, const std::string& type, bool a_in_registers,
                  bool trans_a, bool trans_b) {
  const int count = n / 2;
  std::string regs, outs;
  for (int i = 0; i < count; ++i) {
    regs += fmt::format("{}%{}", i ? ", " : "", i);
    outs += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
    if (i % 8 == 7 && i + 1 < count) outs += "\n        ";
  }
  std::string a_operand, a_input, a_param, tail;
  int next = count;
  if (a_in_registers) {
    a_operand = fmt::format("{{%{}, %{}, %{}, %{}}}", next, next + 1, next + 2, next + 3);
    a_input = "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), ";
    a_param = "const unsigned a[4]";
    next += 4;
    tail = fmt::format("1, 1, {}", trans_b ? 1 : 0);
  } else {
    a_operand = fmt::format("%{}", next);
    a_input = "\"l\"(desc_a), ";
    a_param = "unsigned long long desc_a";
    next += 1;
    tail = fmt::format("1, 1, {}, {}", trans_a ? 1 : 0, trans_b ? 1 : 0);
  }
  const int desc_b = next, scale = next + 1;
  return fmt::format(
      "__device__ __forceinline__ void {0}(float d[{1}], {2}, unsigned long long desc_b,\n"
      "    int scale_d) {{\n"
      "  asm volatile(\n"
      "      \"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{3}, 0;\\n\"\n"
      "      \"wgmma.mma_async.sync.aligned.m64n{4}k16.f32.{5}.{5} {{{6}}}, {7}, %{8}, p, "
      "{9};\\n}}\\n\"\n"
      "      : {10}\n"
      "      : {11}\"l\"(desc_b), \"r\"(scale_d));\n"
      "}}\n",
      name, count, a_param, scale, n, type, regs, a_operand, desc_b, tail, outs, a_input);
}

std::string simple(const std::string& name, const std::string& ptx) {
  return fmt::format(
      "__device__ __forceinline__ void {}() {{\n"
      "  asm volatile(\"{}\\n\" ::: \"memory\");\n"
      "}}\n",
      name, ptx);
}

}  // namespace

std::optional<std::string> hopper_ptx_definition(const std::string& name) {
  static const std::regex kWgmma(
      "cutune_wgmma_m64n([0-9]+)k16_f32_(f16|bf16)_(ss|rs)_([nt])([nt]?)");
  static const std::regex kWait("cutune_wgmma_wait_group_([0-7])");
  static const std::regex kMaxnreg("cutune_setmaxnreg_(inc|dec)_([0-9]+)");
  std::smatch m;
  if (std::regex_match(name, m, kWgmma)) {
    const int n = std::stoi(m[1]);
    const bool rs = m[3] == "rs";
    if (n < 8 || n > 256 || n % 8 != 0 || (rs && m[5].length() != 0) ||
        (!rs && m[5].length() == 0)) {
      return std::nullopt;
    }
    const bool trans_a = !rs && m[4] == "t";
    const bool trans_b = rs ? m[4] == "t" : m[5] == "t";
    return wgmma(name, n, m[2], rs, trans_a, trans_b);
  }
  if (std::regex_match(name, m, kWait)) {
    return simple(name, fmt::format("wgmma.wait_group.sync.aligned {};", m[1].str()));
  }
  if (std::regex_match(name, m, kMaxnreg)) {
    return fmt::format(
        "__device__ __forceinline__ void {}() {{\n"
        "  asm volatile(\"setmaxnreg.{}.sync.aligned.u32 {};\\n\");\n"
        "}}\n",
        name, m[1].str(), m[2].str());
  }
  if (name == "cutune_wgmma_fence") return simple(name, "wgmma.fence.sync.aligned;");
  if (name == "cutune_wgmma_commit_group") return simple(name, "wgmma.commit_group.sync.aligned;");
  if (name == "cutune_wgmma_fence_operand") {
    return std::string(
        "__device__ __forceinline__ void cutune_wgmma_fence_operand(float* r) {\n"
        "  asm volatile(\"\" : \"+f\"(*r) :: \"memory\");\n"
        "}\n");
  }
  if (name == "cutune_wgmma_desc") {
    return std::string(
        "__device__ __forceinline__ long long cutune_wgmma_desc(const void* tile, int "
        "leading_bytes,\n"
        "                                                       int stride_bytes, int swizzle) {\n"
        "  return (long long)cutune_wgmma_desc_encode(\n"
        "      static_cast<unsigned>(__cvta_generic_to_shared(tile)), leading_bytes, stride_bytes, "
        "0,\n"
        "      swizzle);\n"
        "}\n");
  }
  return std::nullopt;
}

}  // namespace cutune
