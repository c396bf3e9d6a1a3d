#pragma once
// The building blocks of the tensor-core templates (gemm_tc, conv2d_tc): both compute a GEMM
// C[M,N] = A[M,K] · B[K,N] with fp16 or bf16 inputs and fp32 accumulation on mma.sync.m16n8k16,
// and differ only in where a block's A and B slices come from (a row-major matrix, or an
// input image gathered patch by patch). gemm_tc.h describes the kernel and its knobs.
//
// The pieces: the knobs and their shape-independent constraints (TcParams), a ring of shared
// tiles with its padding or swizzle (SmemTile), the copy of one slice into a ring slot with
// cp.async zero-fill or element copies (TileCopy, reading through a CopySource), and the whole
// kernel around them (build_tc_gemm, in tc_builder.cc: rasterisation, split-K, the cp.async
// pipeline, ldmatrix or per-lane fragments, mma, epilogue).

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kernels/output_epilogue.h"
#include "src/ir/ir.h"
#include "src/space/config_space.h"

namespace cutune::tc {

// The opt-in dynamic shared memory of sm_80/sm_90 blocks, bytes.
constexpr int64_t kMaxSharedBytes = 227 * 1024;

struct TcParams {
  int bm, bn, bk, wm, wn, stages, smem_layout, copy_bytes, raster, split_k, epi_vec;
  int min_blocks;  // __launch_bounds__'s second argument: blocks per SM to fit registers for
  bool ldmatrix;
  int warps_m() const { return bm / wm; }
  int warps_n() const { return bn / wn; }
  int threads() const { return 32 * warps_m() * warps_n(); }
  int mi() const { return wm / 16; }  // m16 tiles per warp
  int ni() const { return wn / 8; }   // n8 tiles per warp
};

TcParams tc_params(const Config& c);

// Defines every knob (block_m/n/k, warp_m/n, stages, smem_layout, copy_bytes, ldmatrix,
// raster_group, split_k, epilogue_vec, min_blocks) and the constraints that hold for any
// shape: warp tiles divide the block tile, 1 to 16 warps, at most 128 accumulators per thread,
// and min_blocks blocks' register share holds a thread's accumulators and fragments.
void define_tc_knobs(ConfigSpace& space);

// The constraints that follow the GEMM's N and K and the B tile's layout: shared memory within
// the opt-in limit (min_blocks blocks' worth within an SM's), split-K only into fp32 C with scalar
// atomics and with a K slice for every split, paired epilogue stores only for an even N.
void add_tc_shape_constraints(ConfigSpace& space, bool b_k_major, int64_t n, int64_t k, bool out16);

// A ring of `stages` shared tiles of rows × cols 16-bit elements, cols contiguous, laid out by
// smem_layout (0 plain, 1 rows padded by 8 elements, 2 rotation-swizzled 16-byte chunks).
struct SmemTile {
  ir::Buffer buffer;
  int rows, cols, layout;
  int row_len() const { return layout == 1 ? cols + 8 : cols; }
  int64_t stage_elements() const { return int64_t{rows} * row_len(); }

  // The element offset of (row, col) in stage `stage`.
  ir::Expr offset(const ir::Expr& stage, const ir::Expr& row, const ir::Expr& col) const;
};

// Where the copy of `elems` consecutive tile elements starting at (row, col) of the slice reads
// from: the global element index of the first, and the conditions under which the copy is in
// range (empty: always). An out-of-range copy fills zeros; all `elems` elements must be in
// range together or out of range together.
struct CopySource {
  ir::Expr index;
  std::vector<ir::Expr> in_range;
};
// (row0, col0): the slice's first row and column in the GEMM's view of the operand; (row,
// col): the copy's position within the slice.
using SourceFn = std::function<CopySource(const ir::Expr& row0, const ir::Expr& col0,
                                          const ir::Expr& row, const ir::Expr& col)>;

// A row-major global matrix `ld` elements a row, guarded against rows >= row_limit and
// columns >= col_limit where asked.
SourceFn matrix_source(int64_t ld, int64_t row_limit, int64_t col_limit, bool guard_rows,
                       bool guard_cols);

// Copies one slice into a SmemTile, `elems` elements per copy: cp.async of 2·elems bytes with
// zero-fill (src_bytes 0 and the buffer's first element as the source when out of range), or
// (elems == 1) a synchronous element copy. Copies are dealt to the block's threads in turn;
// the loop variable is `<prefix>_cp`.
struct TileCopy {
  std::string prefix;
  ir::Buffer global;
  const SmemTile* tile;
  int elems, threads;
  SourceFn source;
  ir::DType dtype;

  int copies() const { return tile->rows * tile->cols / elems; }
  ir::Stmt copy(const ir::Expr& tx, const ir::Expr& stage, const ir::Expr& row0,
                const ir::Expr& col0) const;
};

// One operand of build_tc_gemm: its global buffer, how wide its copies are and where they read.
struct TcOperand {
  ir::Buffer global;
  int elems;  // elements per copy: 1 (synchronous), 2, 4 or 8 (cp.async of 4, 8, 16 bytes)
  SourceFn source;
};

// A tensor-core GEMM kernel to build. A's slices are block_m × block_k ([rows m][k]); B's are
// [k][n] when b_k_major (fragments by ldmatrix .trans) and [n][k] otherwise. C is a row-major
// m × n matrix of fp32 or (out16) the input type.
struct TcGemmSpec {
  std::string name;
  int64_t m, n, k;
  ir::DType input;
  bool out16;
  bool b_k_major;
  TcOperand a, b;
  ir::Buffer c;
  std::vector<ir::Buffer> parameters;  // the kernel's global buffers in parameter order
  // Applied to the accumulators in registers before the store; its buffers are among
  // `parameters`, its scalars the kernel's.
  OutputEpilogue epilogue;
};

ir::Kernel build_tc_gemm(const TcGemmSpec& spec, const TcParams& p);

// The block and thread loops of a tiled GEMM (the mma.sync and wgmma templates), around a body
// that reads `k_tiles` and `first_k_tile` (this split's K slices: split kz takes
// tiles_per_split of them, the last split fewer) and `tile_m` / `tile_n` (from bx, with grouped
// rasterisation: `raster` rows of tiles at a time, column-major inside a group); then the loops
// tx (threads), kz (when split_k > 1) and bx.
// With tiles_per_block T > 1 the grid has ceil(tiles / T) blocks and `body` binds tile_m and
// tile_n itself, for each of its tiles, by bind_tile; so does a persistent grid, whose extent
// is the tiles (the most blocks it can use: the launch takes fewer, launch_grid.h), and whose
// body also binds first_k_tile and k_tiles per tile where `k_per_tile` (pieces of K).
// With a cluster of cluster_m x cluster_n blocks (one of them 2), the grid walks cluster
// tiles instead (the tiles in groups of cluster_m rows by cluster_n columns, the shape rounded
// up to whole groups), `tile` in bind_tile is a cluster tile, and the block of rank `cta_rank`
// (which the caller binds) takes its row (or column) of it; the blocks of a cluster are
// consecutive along x: cluster bx / size, rank bx % size. A block whose tile lies past the
// shape still runs, as its peer needs it to.
struct TileGrid {
  int64_t tiles_m, tiles_n, k_tiles;
  int split_k, raster, threads;
  int tiles_per_block = 1;
  bool persistent = false;
  bool k_per_tile = false;
  int cluster_m = 1, cluster_n = 1;
  int cluster_size() const { return cluster_m * cluster_n; }
  // A run-time M (WgmmaGemmSpec::m_rows): the tile rows as the kernel computes them from M,
  // which the grouped rasterisation reads in place of tiles_m; undefined: tiles_m.
  ir::Expr run_tiles_m = ir::Expr();
  // The tiles, or cluster tiles, the grid walks.
  int64_t units() const {
    return (tiles_m + cluster_m - 1) / cluster_m * ((tiles_n + cluster_n - 1) / cluster_n);
  }
  int64_t blocks() const {
    return (units() + tiles_per_block - 1) / tiles_per_block * cluster_size();
  }
};
ir::Stmt bind_tile_grid(ir::Stmt body, const TileGrid& g);
// `body` under `tile_m` and `tile_n` of output tile `tile` (0 .. tiles_m·tiles_n - 1), in the
// grid's rasterisation.
ir::Stmt bind_tile(ir::Stmt body, const TileGrid& g, const ir::Expr& tile);

// The knobs of a reference configuration: block_m × block_n tiles of warp_m × warp_n warps,
// a `stages`-slot ring of 32 wide K slices in swizzled 16-byte chunks, ldmatrix fragments,
// groups of `raster_group` tile rows, no split-K, paired epilogue stores.
nlohmann::json ring_knobs(int block_m, int block_n, int warp_m, int warp_n, int stages,
                          int raster_group);

// The loop and buffer names build_tc_gemm can produce besides the globals (feature slots).
std::vector<std::string> tc_loop_names();
std::vector<std::string> tc_local_buffer_names();

}  // namespace cutune::tc
