#pragma once
// Tensor-core GEMM: C[M,N] = A[M,K] · B with fp16 or bf16 inputs and fp32 accumulation on
// mma.sync.m16n8k16 (src/ir/intrinsics.h). A is row-major [M,K]; B is row-major [K,N]
// (layout nn, fragments by ldmatrix .trans) or column-major, stored [N,K] (layout nt, no
// transpose). C is fp32, or the input type (rounded to nearest even) for the `_out16`
// templates. Any M, N, K >= 1: every tail is guarded.
//
// Registered as the family gemm/mma: dtype fp16 or bf16, out-dtype fp32 or the input type,
// layout nn or nt (template names such as `gemm_fp16_nt_out16`: template.h).
//
// The kernel: the grid is one dimension of block_m × block_n output tiles, ordered in groups
// of raster_group tile rows (raster_group = 1: row-major; larger: column-major within a group
// of rows, so that concurrently running blocks share A and B panels in L2), times split_k
// along grid y. Each block has (block_m/warp_m)·(block_n/warp_n) warps; a warp owns a
// warp_m × warp_n tile of (warp_m/16)·(warp_n/8) m16n8 accumulators (4 fp32 per lane).
// The K loop runs over block_k slices through a ring of `stages` shared-memory buffers:
// stages-1 slices are in flight while one is computed (cp.async groups, one per slice, waited
// with wait_group(stages-2) and a barrier). copy_bytes is the size of one global->shared copy
// (4, 8, 16: cp.async with zero-fill for out-of-range chunks; 2: a synchronous element copy,
// the only choice when rows are not 4-byte aligned, e.g. odd K). Shared tiles keep the
// contiguous global dimension contiguous (A, B-nt: [rows][k]; B-nn: [k][n]) and are laid out
// by smem_layout: 0 plain, 1 rows padded by 8 elements (16 bytes), 2 rotation-swizzled
// 16-byte chunks (chunk c of row r is stored at (c + r/rep) mod G within its group of G =
// min(chunks, 8), rep = max(1, 8/chunks): the same bank-conflict freedom for ldmatrix as the
// usual XOR swizzle, with the IR's mod). With ldmatrix = 1 fragments come from
// ldmatrix.x4 (x2 for a lone n8 tile); with 0 each lane packs its own pairs from shared memory.
// split_k > 1 partitions the K slices among grid-y blocks that atomicAdd their partial sums
// into C (fp32 C only, which is then zeroed before the launch: TensorSpec::zero_init).
// epilogue_vec 2 stores each lane's two adjacent columns as one float2 (fp32) or one 32-bit
// pair (16-bit C) when N is even.
//
// The kernel is assembled from the building blocks in tc_blocks.h, which the tensor-core
// convolution (conv2d_tc.h) shares.

#include "kernels/gemm16_template.h"

namespace cutune {

class GemmTcTemplate final : public Gemm16Template {
 public:
  // input: Float16 or BFloat16; out16: C in the input type instead of fp32.
  GemmTcTemplate(int64_t m, int64_t n, int64_t k, GemmLayout layout, ir::DType input, bool out16,
                 Epilogue epilogue = {});

  std::string name() const override;
  ir::Kernel build(const Config& config) const override;
  std::vector<Config> reference_configs() const override;
  std::vector<std::string> loop_names() const override;
  std::vector<std::string> buffer_names() const override;

 private:
  void define_space();
};

}  // namespace cutune
