#include "src/ir/hopper_intrinsics.h"

#include <fmt/format.h>

#include "src/ir/intrinsics.h"

namespace cutune::ir {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw IRError(what);
}

Stmt call(const std::string& name, std::vector<Expr> args) {
  return Evaluate::make(Call::make(Type::i32(), name, std::move(args)));
}

void check_shape(const WgmmaShape& s) {
  require(s.n >= 8 && s.n <= 256 && s.n % 8 == 0, fmt::format("wgmma N is 8..256 in steps of 8, "
                                                              "got {}",
                                                              s.n));
  require(s.input == DType::Float16 || s.input == DType::BFloat16,
          "wgmma takes Float16 or BFloat16 inputs");
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

int swizzle_bytes(WgmmaSwizzle s) {
  switch (s) {
    case WgmmaSwizzle::b128:
      return 128;
    case WgmmaSwizzle::b64:
      return 64;
    case WgmmaSwizzle::b32:
      return 32;
    default:
      return 0;
  }
}

Expr wgmma_descriptor(const Expr& smem_address, int leading_bytes, int stride_bytes,
                      WgmmaSwizzle swizzle) {
  auto ok_offset = [](int b) { return b >= 0 && b < (1 << 18) && b % 16 == 0; };
  require(ok_offset(leading_bytes) && ok_offset(stride_bytes),
          "wgmma descriptor offsets are multiples of 16 below 2^18");
  require(smem_address.type().element_bytes() == 2, "wgmma descriptors address 16-bit tiles");
  return Call::make(
      Type::i64(), "cutune_wgmma_desc",
      {smem_address, Expr(leading_bytes), Expr(stride_bytes), Expr(static_cast<int>(swizzle))});
}

std::string wgmma_name(const WgmmaShape& s, bool a_in_registers) {
  const char* type = s.input == DType::Float16 ? "f16" : "bf16";
  if (a_in_registers) {
    return fmt::format("cutune_wgmma_m64n{}k16_f32_{}_rs_{}", s.n, type, s.trans_b ? "t" : "n");
  }
  return fmt::format("cutune_wgmma_m64n{}k16_f32_{}_ss_{}{}", s.n, type, s.trans_a ? "t" : "n",
                     s.trans_b ? "t" : "n");
}

Stmt wgmma_ss(const WgmmaShape& shape, const Expr& d, const Expr& desc_a, const Expr& desc_b,
              const Expr& scale_d) {
  check_shape(shape);
  require(d.type() == Type::f32(), "wgmma accumulators are Float32");
  require(desc_a.type() == Type::i64() && desc_b.type() == Type::i64(),
          "wgmma descriptors are Int64");
  require(scale_d.type() == Type::i32(), "wgmma scale_d is Int32");
  return call(wgmma_name(shape, false), {d, desc_a, desc_b, scale_d});
}

Stmt wgmma_rs(const WgmmaShape& shape, const Expr& d, const Expr& a, const Expr& desc_b,
              const Expr& scale_d) {
  check_shape(shape);
  require(!shape.trans_a, "wgmma with A in registers has no transposed A");
  require(d.type() == Type::f32(), "wgmma accumulators are Float32");
  require(a.type() == Type::u32(), "wgmma A fragments are UInt32");
  require(desc_b.type() == Type::i64(), "wgmma descriptors are Int64");
  require(scale_d.type() == Type::i32(), "wgmma scale_d is Int32");
  return call(wgmma_name(shape, true), {d, a, desc_b, scale_d});
}

Stmt wgmma_fence() { return call("cutune_wgmma_fence", {}); }
Stmt wgmma_commit_group() { return call("cutune_wgmma_commit_group", {}); }

Stmt wgmma_wait_group(int pending) {
  require(pending >= 0 && pending <= 7, "wgmma.wait_group takes 0..7");
  return call(fmt::format("cutune_wgmma_wait_group_{}", pending), {});
}

Stmt wgmma_fence_operand(const Expr& r) {
  require(r.type() == Type::f32(), "wgmma_fence_operand takes a Float32 register");
  return call("cutune_wgmma_fence_operand", {r});
}

Stmt setmaxnreg(bool increase, int count) {
  require(count >= 24 && count <= 256 && count % 8 == 0,
          "setmaxnreg takes 24..256 registers in steps of 8");
  return call(fmt::format("cutune_setmaxnreg_{}_{}", increase ? "inc" : "dec", count), {});
}

bool needs_sm90a(const std::string& name) {
  if (starts_with(name, "cutune_setmaxnreg_")) return true;
  return starts_with(name, "cutune_wgmma_") && name != "cutune_wgmma_desc" &&
         name != "cutune_wgmma_fence_operand";
}

bool is_warpgroup_collective(const std::string& name) {
  return starts_with(name, "cutune_wgmma_m64n") || starts_with(name, "cutune_setmaxnreg_");
}

const std::vector<std::string>& hopper_intrinsic_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"cutune_wgmma_desc", "cutune_wgmma_fence",
                                  "cutune_wgmma_commit_group", "cutune_wgmma_fence_operand"};
    for (int n = 0; n <= 7; ++n) v.push_back(fmt::format("cutune_wgmma_wait_group_{}", n));
    for (int count = 24; count <= 256; count += 8) {
      v.push_back(fmt::format("cutune_setmaxnreg_inc_{}", count));
      v.push_back(fmt::format("cutune_setmaxnreg_dec_{}", count));
    }
    for (int n = 8; n <= 256; n += 8) {
      for (DType t : {DType::Float16, DType::BFloat16}) {
        for (bool tb : {false, true}) {
          v.push_back(wgmma_name({n, t, false, tb}, true));
          for (bool ta : {false, true}) v.push_back(wgmma_name({n, t, ta, tb}, false));
        }
      }
    }
    return v;
  }();
  return names;
}

}  // namespace cutune::ir
