#include "src/codegen/cuda_intrinsics.h"

#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "src/codegen/cuda_intrinsics_hopper.h"

namespace cutune {

namespace {

// mma.sync m16n8k16, row-major A and column-major B, fp32 accumulators (PTX ISA, "Warp-level
// matrix multiply-accumulate instructions"). d may alias c: c is read into the input operands
// before d is written.
std::string mma(const char* name, const char* type) {
  return fmt::format(
      "__device__ __forceinline__ void {0}(float d[4], const unsigned a[4], const unsigned b[2],\n"
      "                                    const float c[4]) {{\n"
      "  asm volatile(\n"
      "      \"mma.sync.aligned.m16n8k16.row.col.f32.{1}.{1}.f32 {{%0, %1, %2, %3}}, \"\n"
      "      \"{{%4, %5, %6, %7}}, {{%8, %9}}, {{%10, %11, %12, %13}};\\n\"\n"
      "      : \"=f\"(d[0]), \"=f\"(d[1]), \"=f\"(d[2]), \"=f\"(d[3])\n"
      "      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]),\n"
      "        \"f\"(c[0]), \"f\"(c[1]), \"f\"(c[2]), \"f\"(c[3]));\n"
      "}}\n",
      name, type);
}

std::string ldmatrix(int count, bool trans) {
  std::string regs, outs;
  for (int i = 0; i < count; ++i) {
    regs += fmt::format("{}%{}", i ? ", " : "", i);
    outs += fmt::format("{}\"=r\"(r[{}])", i ? ", " : "", i);
  }
  return fmt::format(
      "__device__ __forceinline__ void cutune_ldmatrix_x{0}{1}(unsigned r[{0}], const void* "
      "row_address) {{\n"
      "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row_address));\n"
      "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x{0}{2}.shared.b16 {{{3}}}, [%{0}];\\n\"\n"
      "               : {4}\n"
      "               : \"r\"(s)\n"
      "               : \"memory\");\n"
      "}}\n",
      count, trans ? "_trans" : "", trans ? ".trans" : "", regs, outs);
}

// .cg (L2 only) exists for 16-byte copies alone; 4 and 8 bytes go through L1 (.ca).
std::string cp_async(int bytes) {
  return fmt::format(
      "__device__ __forceinline__ void cutune_cp_async_{0}(void* shared_dst, const void* "
      "global_src, int src_bytes) {{\n"
      "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));\n"
      "  asm volatile(\"cp.async.{1}.shared.global [%0], [%1], {0}, %2;\\n\"\n"
      "               :\n"
      "               : \"r\"(s), \"l\"(__cvta_generic_to_global(global_src)), \"r\"(src_bytes)\n"
      "               : \"memory\");\n"
      "}}\n",
      bytes, bytes == 16 ? "cg" : "ca");
}

std::string cp_async_wait(int n) {
  return fmt::format(
      "__device__ __forceinline__ void cutune_cp_async_wait_{0}() {{\n"
      "  asm volatile(\"cp.async.wait_group {0};\\n\" ::: \"memory\");\n"
      "}}\n",
      n);
}

// cvt.rn.{f16,bf16}x2.f32 d, a, b puts a in the upper half and b in the lower.
std::string pack(const char* name, const char* type) {
  return fmt::format(
      "__device__ __forceinline__ unsigned {0}(float lo, float hi) {{\n"
      "  unsigned r;\n"
      "  asm(\"cvt.rn.{1}x2.f32 %0, %1, %2;\\n\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n"
      "  return r;\n"
      "}}\n",
      name, type);
}

// One definition per intrinsic name, in the order they are emitted.
const std::vector<std::pair<std::string, std::string>>& ptx_definitions() {
  static const std::vector<std::pair<std::string, std::string>> defs = [] {
    std::vector<std::pair<std::string, std::string>> d;
    d.emplace_back("cutune_mma_m16n8k16_f16", mma("cutune_mma_m16n8k16_f16", "f16"));
    d.emplace_back("cutune_mma_m16n8k16_bf16", mma("cutune_mma_m16n8k16_bf16", "bf16"));
    for (bool trans : {false, true}) {
      for (int count : {1, 2, 4}) {
        d.emplace_back(fmt::format("cutune_ldmatrix_x{}{}", count, trans ? "_trans" : ""),
                       ldmatrix(count, trans));
      }
    }
    for (int bytes : {4, 8, 16})
      d.emplace_back(fmt::format("cutune_cp_async_{}", bytes), cp_async(bytes));
    d.emplace_back("cutune_cp_async_commit",
                   "__device__ __forceinline__ void cutune_cp_async_commit() {\n"
                   "  asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n"
                   "}\n");
    for (int n = 0; n <= 4; ++n)
      d.emplace_back(fmt::format("cutune_cp_async_wait_{}", n), cp_async_wait(n));
    d.emplace_back("cutune_pack_f16x2", pack("cutune_pack_f16x2", "f16"));
    d.emplace_back("cutune_pack_bf16x2", pack("cutune_pack_bf16x2", "bf16"));
    d.emplace_back("cutune_f32_to_f16",
                   "__device__ __forceinline__ cutune_half cutune_f32_to_f16(float x) {\n"
                   "  unsigned short r;\n"
                   "  asm(\"cvt.rn.f16.f32 %0, %1;\\n\" : \"=h\"(r) : \"f\"(x));\n"
                   "  return r;\n"
                   "}\n");
    d.emplace_back("cutune_f32_to_bf16",
                   "__device__ __forceinline__ cutune_bf16 cutune_f32_to_bf16(float x) {\n"
                   "  unsigned short r;\n"
                   "  asm(\"cvt.rn.bf16.f32 %0, %1;\\n\" : \"=h\"(r) : \"f\"(x));\n"
                   "  return r;\n"
                   "}\n");
    d.emplace_back("cutune_f16_to_f32",
                   "__device__ __forceinline__ float cutune_f16_to_f32(cutune_half x) {\n"
                   "  float r;\n"
                   "  asm(\"cvt.f32.f16 %0, %1;\\n\" : \"=f\"(r) : \"h\"(x));\n"
                   "  return r;\n"
                   "}\n");
    // bfloat16 is the upper half of a binary32: widening is exact.
    d.emplace_back("cutune_bf16_to_f32",
                   "__device__ __forceinline__ float cutune_bf16_to_f32(cutune_bf16 x) {\n"
                   "  return __uint_as_float(static_cast<unsigned>(x) << 16);\n"
                   "}\n");
    // Broadcast from lane 0: afterwards the compiler knows the value is the same in every lane.
    d.emplace_back("cutune_warp_uniform",
                   "__device__ __forceinline__ int cutune_warp_uniform(int v) {\n"
                   "  return __shfl_sync(0xffffffffu, v, 0);\n"
                   "}\n");
    return d;
  }();
  return defs;
}

// Plain C++ helpers: no PTX, so the emulator compiles the same text.
const std::vector<std::pair<std::string, std::string>>& plain_definitions() {
  static const std::vector<std::pair<std::string, std::string>> defs = {
      {"cutune_pack_b16x2",
       "__device__ __forceinline__ unsigned cutune_pack_b16x2(unsigned short lo, unsigned short "
       "hi) {\n"
       "  return static_cast<unsigned>(lo) | (static_cast<unsigned>(hi) << 16);\n"
       "}\n"},
      {"cutune_grid_blocks",
       "__device__ __forceinline__ int cutune_grid_blocks() {\n"
       "  return static_cast<int>(gridDim.x);\n"
       "}\n"}};
  return defs;
}

}  // namespace

std::string storage_typedefs() {
  return "typedef unsigned short cutune_half;  // IEEE binary16 bits\n"
         "typedef unsigned short cutune_bf16;  // bfloat16 bits\n";
}

std::string intrinsic_definitions(const std::set<std::string>& used) {
  std::string ptx, plain;
  for (const auto& [name, text] : ptx_definitions()) {
    if (used.count(name)) ptx += text;
  }
  // The Hopper ones are generated per name (src/codegen/cuda_intrinsics_hopper.cc).
  std::string hopper;
  for (const std::string& name : used) {
    if (std::optional<std::string> text = hopper_ptx_definition(name)) hopper += *text;
  }
  if (used.count("cutune_wgmma_desc")) {
    std::string helpers = wgmma_descriptor_text();
    const std::string once = "#pragma once\n";
    if (size_t at = helpers.find(once); at != std::string::npos) helpers.erase(at, once.size());
    hopper = helpers + hopper;
  }
  ptx += hopper;
  for (const auto& [name, text] : plain_definitions()) {
    if (used.count(name)) plain += text;
  }
  std::string out;
  if (!ptx.empty()) {
    out +=
        "\n// Tensor-core and cp.async intrinsics (PTX); the CPU emulator defines its own.\n"
        "#if defined(__CUDA_ARCH__)\n" +
        ptx + "#endif\n";
  }
  if (!plain.empty()) out += "\n" + plain;
  return out;
}

}  // namespace cutune
