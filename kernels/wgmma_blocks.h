#pragma once
// The building blocks of the Hopper warpgroup-MMA templates (gemm_wgmma, and the implicit-GEMM
// convolutions built on it): a GEMM C[M,N] = A[M,K] · B with fp16 or bf16 inputs and fp32
// accumulation on wgmma.mma_async m64nNk16 for sm_90a, whose A and B slices come from wherever
// a SourceFn (tc_blocks.h) says (a row-major matrix, or an image gathered patch by patch).
// gemm_wgmma.h describes the kernel, its shared layouts and its knobs.

#include <string>
#include <vector>

#include "kernels/tc_blocks.h"
#include "src/ir/ir.h"
#include "src/space/config_space.h"

namespace cutune::wg {

struct WgmmaParams {
  int bm, bn, bk, stages, warpgroups, swizzle, copy_bytes, raster, split_k, epilogue;
  int threads() const { return 128 * warpgroups; }
  int strips() const { return bm / (64 * warpgroups); }  // m64 strips per warpgroup
  int acc_per_strip() const { return bn / 2; }
  // Bytes of one row of a layout column, and the elements it holds.
  int row_bytes() const { return swizzle == 0 ? 16 : swizzle; }
  int column_elems() const { return row_bytes() / 2; }
};

WgmmaParams wgmma_params(const Config& c);

// Defines every knob (block_m/n/k, stages, warpgroups, swizzle, copy_bytes, raster_group,
// split_k, epilogue) and the constraints that hold for any shape: whole m64 strips per
// warpgroup, at most 128 accumulators a thread, the swizzle's row within the tiles (B's
// block_n too when B is MN-major in shared memory).
void define_wgmma_knobs(ConfigSpace& space, bool b_mn_major);

// The constraints that follow N, K and the output type: shared memory within the opt-in
// limit, split-K only into fp32 C with scalar atomics and with a K slice for every split,
// paired stores only for an even N and staged ones for N % 4 == 0.
void add_wgmma_shape_constraints(ConfigSpace& space, int64_t n, int64_t k, bool out16);

// A warpgroup-MMA GEMM kernel to build. A's slices are block_m × block_k, K contiguous; B's
// are [block_k][block_n] (N contiguous) when b_mn_major and [block_n][block_k] otherwise. C is
// a row-major m × n matrix of fp32 or (out16) the input type.
struct WgmmaGemmSpec {
  std::string name;
  int64_t m, n, k;
  ir::DType input;
  bool out16;
  bool b_mn_major;
  ir::Buffer a, b, c;
  tc::SourceFn a_source, b_source;
  std::vector<ir::Buffer> parameters;  // the kernel's global buffers in parameter order
};

ir::Kernel build_wgmma_gemm(const WgmmaGemmSpec& spec, const WgmmaParams& p);

// The loop and buffer names build_wgmma_gemm can produce besides the globals (feature slots).
std::vector<std::string> wgmma_loop_names();
std::vector<std::string> wgmma_local_buffer_names();

}  // namespace cutune::wg
