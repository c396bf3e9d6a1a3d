#pragma once
// The shared tiles of build_wgmma_gemm (wgmma_builder.cc): a ring of tiles in the canonical
// wgmma layout of the configuration's swizzle (gemm_wgmma.h), the element offsets the copies
// write, and the shared-memory matrix descriptors the wgmmas read the tiles through.

#include <cstdint>

#include "kernels/wgmma_blocks.h"
#include "src/ir/hopper_intrinsics.h"
#include "src/ir/ir.h"
#include "src/ir/tensor_map.h"

namespace cutune::wg {

// a XOR b for values below 2^bits, in the IR's arithmetic (it has no bit operations).
ir::Expr xor_bits(const ir::Expr& a, const ir::Expr& b, int bits);
// The descriptors' and the tensor maps' codes of a swizzle of `bytes` (0, 32, 64 or 128).
ir::WgmmaSwizzle wgmma_swizzle(int bytes);
ir::TmaSwizzle tma_swizzle(int bytes);

// A ring of shared tiles of `rows` × `cols` 16-bit elements (cols contiguous) in the canonical
// wgmma layout of the swizzle (gemm_wgmma.h), `stage_elements` apart from `base`.
struct WgmmaTile {
  int64_t base;  // element offset of slot 0 in the shared buffer
  int rows, cols;
  const WgmmaParams* p;
  int64_t stage_elements() const { return int64_t{rows} * cols; }
  // The element offset of (row, col) in slot `slot`.
  ir::Expr offset(const ir::Expr& slot, const ir::Expr& row, const ir::Expr& col) const;
  // Element offset of the start of a descriptor for rows row0.. of a K-major tile at k-step kk,
  // from slot 0's start: affine in slot and row0 (kk is unrolled).
  ir::Expr k_major_step(const ir::Expr& slot, const ir::Expr& row0, const ir::Expr& kk) const;
  ir::Expr k_major_start(const ir::Expr& slot, const ir::Expr& row0, const ir::Expr& kk) const;
  // The same for an MN-major tile (B of nn) at k-step kk.
  ir::Expr mn_major_step(const ir::Expr& slot, const ir::Expr& kk) const;

  // The descriptor of rows row0.. of a K-major tile, or of an MN-major one, at k-step kk of
  // slot `slot`, the tile lying in the shared buffer `smem`.
  ir::Expr k_major_descriptor(const ir::Buffer& smem, const ir::Expr& slot, const ir::Expr& row0,
                              const ir::Expr& kk) const;
  ir::Expr mn_major_descriptor(const ir::Buffer& smem, const ir::Expr& slot,
                               const ir::Expr& kk) const;
};

}  // namespace cutune::wg
