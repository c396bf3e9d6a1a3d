#include "kernels/wgmma_tile.h"

#include "kernels/schedule_helpers.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"

namespace cutune::wg {

using namespace ir;

Expr xor_bits(const Expr& a, const Expr& b, int bits) {
  Expr out = i32(0);
  for (int i = 0; i < bits; ++i) {
    const int64_t bit = int64_t{1} << i;
    out = out + (a / i32(bit) + b / i32(bit)) % 2 * i32(bit);
  }
  return out;
}

WgmmaSwizzle wgmma_swizzle(int bytes) {
  switch (bytes) {
    case 128:
      return WgmmaSwizzle::b128;
    case 64:
      return WgmmaSwizzle::b64;
    case 32:
      return WgmmaSwizzle::b32;
    default:
      return WgmmaSwizzle::none;
  }
}

TmaSwizzle tma_swizzle(int bytes) {
  switch (bytes) {
    case 128:
      return TmaSwizzle::b128;
    case 64:
      return TmaSwizzle::b64;
    case 32:
      return TmaSwizzle::b32;
    default:
      return TmaSwizzle::none;
  }
}

Expr WgmmaTile::offset(const Expr& slot, const Expr& row, const Expr& col) const {
  const int w = p->row_bytes(), e = p->column_elems();
  Expr at = i32(base) + slot * i32(stage_elements()) + col / e * i32(int64_t{rows} * w / 2) +
            row * (w / 2) + col % 8;
  Expr chunk = col % e / 8;
  if (p->swizzle == 0) return at;
  // The 128-byte row bits of the byte offset: row / (128 / w), of log2(w / 16) bits.
  const int bits = w == 128 ? 3 : w == 64 ? 2 : 1;
  Expr phase = row / (128 / w) % (1 << bits);
  return at + xor_bits(chunk, phase, bits) * 8;
}

Expr WgmmaTile::k_major_step(const Expr& slot, const Expr& row0, const Expr& kk) const {
  const int w = p->row_bytes(), e = p->column_elems();
  return slot * i32(stage_elements()) + kk * 16 / e * i32(int64_t{rows} * w / 2) + row0 * (w / 2) +
         kk * 16 % e;
}

Expr WgmmaTile::k_major_start(const Expr& slot, const Expr& row0, const Expr& kk) const {
  return i32(base) + k_major_step(slot, row0, kk);
}

Expr WgmmaTile::mn_major_step(const Expr& slot, const Expr& kk) const {
  return slot * i32(stage_elements()) + kk * 16 * (p->row_bytes() / 2);
}

// Descriptors (gemm_wgmma.h): swizzled K-major tiles step 8 rows by SBO = 8·w bytes (LBO
// unused); interleaved ones step 8 rows by 128 and 8 of K by rows·16. MN-major B steps 8 of
// K by SBO = 8·w and a layout column of N by LBO = block_k·w; interleaved, 8 of N by
// block_k·16 and 8 of K by 128.
Expr WgmmaTile::k_major_descriptor(const Buffer& smem, const Expr& slot, const Expr& row0,
                                   const Expr& kk) const {
  const int w = p->row_bytes();
  const int lbo = p->swizzle == 0 ? rows * 16 : 16, sbo = p->swizzle == 0 ? 128 : 8 * w;
  return wgmma_descriptor(address_of(smem, k_major_start(slot, row0, kk)), lbo, sbo,
                          wgmma_swizzle(p->swizzle));
}

Expr WgmmaTile::mn_major_descriptor(const Buffer& smem, const Expr& slot, const Expr& kk) const {
  const int w = p->row_bytes();
  const int lbo = p->swizzle == 0 ? 128 : p->bk * w, sbo = p->swizzle == 0 ? p->bk * 16 : 8 * w;
  Expr start = i32(base) + mn_major_step(slot, kk);
  return wgmma_descriptor(address_of(smem, start), lbo, sbo, wgmma_swizzle(p->swizzle));
}

}  // namespace cutune::wg
