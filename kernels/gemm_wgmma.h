#pragma once
// Hopper warpgroup-MMA GEMM: C[M,N] = A[M,K] · B with fp16 or bf16 inputs and fp32
// accumulation on wgmma.mma_async m64nNk16 (src/ir/hopper_intrinsics.h), for sm_90a. A is
// row-major [M,K]; B is row-major [K,N] (layout nn: B is MN-major in shared memory, imm-trans-b)
// or column-major, stored [N,K] (layout nt: K-major). C is fp32, or the input type for the
// `_out16` templates. Any M, N, K >= 1: every tail is guarded (cp.async zero-fill).
//
// Registered as the family gemm/wgmma, the default on sm_90 (gemm/mma elsewhere): dtype fp16
// or bf16, out-dtype fp32 or the input type, layout nn or nt (template names such as
// `gemm_fp16_wgmma_nt`: template.h).
//
// The kernel (built by kernels/wgmma_blocks.h, which the convolutions share): a one-dimensional
// grid of block_m × block_n tiles in groups of raster_group tile rows (as gemm_tc.h), times split_k
// along grid y (fp32 C, atomics, zeroed before the launch). A block is `warpgroups` consumer
// warpgroups of 128 threads (and a producer warpgroup after them with producer = 1); warpgroup g
// owns rows g·block_m/warpgroups.. of the tile, as block_m/(64·warpgroups) m64 strips, each one
// wgmma m64n{block_n}k16 per 16 of K, with N = block_n accumulators per strip (block_n/2 floats a
// thread). The K loop runs over block_k slices through a ring of `stages` shared slots filled by
// cp.async (copy_bytes per copy; 2: synchronous element copies) — the load stage is one function
// (load_slice) so that TMA can replace it — waited with cp.async.wait_group(stages-2),
// fence.proxy.async and a barrier; each slice's wgmmas are one commit group, waited with wait_group
// 0 before the slot is refilled.
//
// loads (0 cp_async, 1 tma) and producer (0, 1): with tma, A's and B's slices arrive by
// cp.async.bulk.tensor.2d, one box per layout column (below), whose image under the tensor map's
// swizzle is exactly that column, so the descriptors read TMA's output as they read cp.async's
// (B-nn's MN-major columns are boxes of E columns of N by block_k rows; the interleaved layout's
// 8-element columns are boxes of 16-byte rows); each ring slot has a "full" mbarrier (one
// expect_tx of the slot's bytes by the thread that issues the copies) and an "empty" one (every
// consumer thread arrives after the slice's wgmmas; the issuing thread waits for that phase
// before refilling the slot), so the loop has no block-wide barrier. Without a producer thread
// 0 issues; with one, an extra warpgroup (the last) lowers its registers (setmaxnreg 40) and
// its first thread issues every copy, while the consumers raise theirs (232) and wait on the
// full barriers. TMA needs 16-byte global row strides: K % 8 == 0, and N % 8 == 0 for nn
// (constrained); copy_bytes keeps the value 16 with tma.
//
// mma_pipe, tiles_per_block and pingpong (wgmma_blocks.h): a slice's wgmmas kept in flight
// while the next slice's issue; several output tiles a block in turn (with a producer); and
// with those, ping-pong consumers: two warpgroups each computing whole tiles (tile t is
// warpgroup t % 2's) and taking the tensor cores in turn through an order mbarrier, so that one
// stores its tile while the other computes.
//
// persistent and last_wave_split (wgmma_blocks.h): the grid is sized from the device, not the
// shape. The kernel's block_x extent is its tiles, the Kernel says it is persistent (one block
// an SM: setmaxnreg's launch bounds), and whoever launches it takes G = min(tiles, SMs) blocks
// (src/codegen/launch_grid.h: the GPU worker with its device, the emulator with its
// architecture's target_limits or a test's forced grid, the export loader with the user's GPU).
// Block b walks tiles b, b + G, ... (gridDim.x, so any G is correct) in the raster_group
// order, with the several-tiles ring of tiles_per_block and, with pingpong, its consumers.
// With last_wave_split (fp32 C), the slices of the tiles % G tiles of a part-empty last wave
// are dealt out evenly to the G blocks (stream-K); a tile that several shares meet is added
// into the zeroed C by atomics, with no fix-up pass: no block waits for another.
//
// Shared tiles are the canonical wgmma layouts of src/ir/wgmma_descriptor.h: a tile of R rows
// by C contiguous elements (A: [block_m][block_k]; B-nt: [block_n][block_k]; B-nn:
// [block_k][block_n]) is split into columns of E = swizzle/2 elements (8 for swizzle 0, the
// interleaved layout of 8x16-byte core matrices), each R rows of `swizzle` bytes, with the
// swizzle's XOR of 16-byte chunks; every slot starts on a 1024-byte boundary.
//
// epilogue: 0 scalar stores (atomics with split-K), 1 pairs of adjacent columns (float2, or
// one 32-bit word of 16-bit C; N even), 2 through shared memory: the tile is staged as fp32
// rows and written by the whole block with 16-byte (fp32) or 2x4-byte (16-bit) stores of 4
// consecutive columns (N a multiple of 4); with tma_store = 1 (the whole tile) or 2 (a column
// of 128 bytes at a time, through two columns' buffers) it is staged in C's type and stored by
// TMA instead (wgmma_blocks.h, define_tma_store_knob), also with several tiles a block.

#include "kernels/gemm16_template.h"
#include "kernels/wgmma_blocks.h"

namespace cutune {

class GemmWgmmaTemplate final : public Gemm16Template {
 public:
  // runtime_m: the kernels take M as a scalar and serve any M (Template::runtime_m); the
  // configurations are then those of one tile a block, not persistent.
  GemmWgmmaTemplate(int64_t m, int64_t n, int64_t k, GemmLayout layout, ir::DType input, bool out16,
                    bool runtime_m = false, Epilogue epilogue = {});

  std::string name() const override;
  ir::Kernel build(const Config& config) const override;
  MRule runtime_m_rule(const Config& config) const override;
  // What build hands build_wgmma_gemm (tests plant bugs through its hooks).
  wg::WgmmaGemmSpec spec(const Config& config) const;
  std::vector<Config> reference_configs() const override;
  std::vector<std::string> loop_names() const override;
  std::vector<std::string> buffer_names() const override;

 private:
  void define_space();
};

}  // namespace cutune
