#include "src/ir/intrinsics.h"

#include <fmt/format.h>

namespace cutune::ir {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw IRError(what);
}

bool is_16bit(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

Stmt call(const std::string& name, std::vector<Expr> args) {
  return Evaluate::make(Call::make(Type::i32(), name, std::move(args)));
}

}  // namespace

Expr address_of(const Buffer& buf, const Expr& index) {
  return Call::make(buf->type, kAddressOf, {Load::make(buf, index)});
}

Stmt mma_m16n8k16(DType input, const Expr& d, const Expr& a, const Expr& b, const Expr& c) {
  require(is_16bit(input), "mma_m16n8k16 takes Float16 or BFloat16 inputs");
  require(d.type() == Type::f32() && c.type() == Type::f32(), "mma accumulators are Float32");
  require(a.type() == Type::u32() && b.type() == Type::u32(), "mma A/B fragments are UInt32");
  return call(input == DType::Float16 ? "cutune_mma_m16n8k16_f16" : "cutune_mma_m16n8k16_bf16",
              {d, a, b, c});
}

Stmt ldmatrix(int count, bool trans, const Expr& dst, const Expr& row_address) {
  require(count == 1 || count == 2 || count == 4, "ldmatrix loads 1, 2 or 4 matrices");
  require(dst.type() == Type::u32(), "ldmatrix fills UInt32 registers");
  require(row_address.type().element_bytes() == 2, "ldmatrix reads 16-bit elements");
  return call(fmt::format("cutune_ldmatrix_x{}{}", count, trans ? "_trans" : ""),
              {dst, row_address});
}

Stmt cp_async(int bytes, const Expr& dst, const Expr& src, const Expr& src_bytes) {
  require(bytes == 4 || bytes == 8 || bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  require(src_bytes.type() == Type::i32(), "cp.async src_bytes is Int32");
  return call(fmt::format("cutune_cp_async_{}", bytes), {dst, src, src_bytes});
}

Stmt cp_async_commit() { return call("cutune_cp_async_commit", {}); }

Stmt cp_async_wait(int pending) {
  require(pending >= 0 && pending <= 4, "cp.async wait_group takes 0..4");
  return call(fmt::format("cutune_cp_async_wait_{}", pending), {});
}

Expr f32_to_storage(DType storage, const Expr& value) {
  require(is_16bit(storage) && value.type() == Type::f32(), "f32_to_storage: Float32 to 16-bit");
  return storage == DType::Float16 ? Call::make(Type::f16(), "cutune_f32_to_f16", {value})
                                   : Call::make(Type::bf16(), "cutune_f32_to_bf16", {value});
}

Expr storage_to_f32(const Expr& value) {
  DType d = value.type().dtype;
  require(is_16bit(d) && value.type().lanes == 1, "storage_to_f32 takes one 16-bit value");
  return Call::make(Type::f32(), d == DType::Float16 ? "cutune_f16_to_f32" : "cutune_bf16_to_f32",
                    {value});
}

Expr pack_x2(DType storage, const Expr& lo, const Expr& hi) {
  require(is_16bit(storage) && lo.type() == Type::f32() && hi.type() == Type::f32(),
          "pack_x2 packs two Float32 into 16-bit storage");
  // Typed as the two-lane storage vector so that it can be stored to a 16-bit buffer as one
  // word; as a value it is the same 32 bits as a UInt32.
  return Call::make(Type{storage, 2},
                    storage == DType::Float16 ? "cutune_pack_f16x2" : "cutune_pack_bf16x2",
                    {lo, hi});
}

Expr pack_b16x2(const Expr& lo, const Expr& hi) {
  require(lo.type().element_bytes() == 2 && lo.type() == hi.type() && lo.type().lanes == 1,
          "pack_b16x2 packs two 16-bit values");
  return Call::make(Type::u32(), "cutune_pack_b16x2", {lo, hi});
}

Expr warp_uniform(const Expr& value) {
  require(value.type() == Type::i32(), "warp_uniform broadcasts an Int32");
  return Call::make(Type::i32(), kWarpUniform, {value});
}

const Expr& warp_uniform_operand(const Expr& e) {
  if (e.kind() != NodeKind::Call) return e;
  const auto* call = static_cast<const Call*>(e.get());
  return call->name == kWarpUniform && call->args.size() == 1 ? call->args[0] : e;
}

Expr grid_blocks() { return Call::make(Type::i32(), kGridBlocks, {}); }

Stmt atomic_add(const Buffer& buf, const Expr& index, const Expr& value) {
  require(buf->type == Type::f32() && value.type() == Type::f32(), "atomic_add is Float32");
  return call("atomicAdd", {address_of(buf, index), value});
}

const std::vector<std::string>& intrinsic_names() {
  static const std::vector<std::string> names = {
      "cutune_mma_m16n8k16_f16",  "cutune_mma_m16n8k16_bf16", "cutune_ldmatrix_x1",
      "cutune_ldmatrix_x2",       "cutune_ldmatrix_x4",       "cutune_ldmatrix_x1_trans",
      "cutune_ldmatrix_x2_trans", "cutune_ldmatrix_x4_trans", "cutune_cp_async_4",
      "cutune_cp_async_8",        "cutune_cp_async_16",       "cutune_cp_async_commit",
      "cutune_cp_async_wait_0",   "cutune_cp_async_wait_1",   "cutune_cp_async_wait_2",
      "cutune_cp_async_wait_3",   "cutune_cp_async_wait_4",   "cutune_pack_f16x2",
      "cutune_pack_bf16x2",       "cutune_f32_to_f16",        "cutune_f32_to_bf16",
      "cutune_f16_to_f32",        "cutune_bf16_to_f32",       "cutune_pack_b16x2",
      kWarpUniform,               kGridBlocks};
  return names;
}

}  // namespace cutune::ir
