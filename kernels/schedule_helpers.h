#pragma once
// Pieces the fp32 schedule templates share: integer helpers, reference configurations, the loops
// that share a tile's copy out over a block's threads, and the register-tiled inner product of the
// GEMM-shaped templates (gemm, and conv2d_nhwc, which is an implicit GEMM).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/conv_shape.h"
#include "src/ir/ir.h"
#include "src/space/config_space.h"

namespace cutune {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Appends the configuration with these knob values to `out` when it is valid in `space`: a
// reference configuration that does not suit the shape is left out.
void add_if_valid(const ConfigSpace& space, nlohmann::json knobs, std::vector<Config>& out);

// The CPU reference of a row-major GEMM, accumulated in double: c[m,n] = a[m,k] · b, with b
// stored [k,n], or [n,k] when b_transposed.
void reference_gemm(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c,
                    int64_t m, int64_t n, int64_t k, bool b_transposed);

// Input rows (or columns) a block's patch spans for `tile` outputs and `taps` filter taps.
int64_t patch_extent(int64_t tile, int64_t taps, const ConvShape& s);

// The largest thread count in `choices` that keeps a tile along an axis of `extent` outputs
// below twice the extent (the "not mostly overhang" rule of the direct convolutions).
int64_t max_threads_along(const std::vector<int64_t>& choices, int64_t extent);

// `elements` consecutive slots shared out over `threads` threads: slot v = r·threads + t, the
// unrolled loop `var` running over r, the last round guarded where `threads` does not divide
// `elements`.
ir::Stmt cooperative(const std::string& var, int64_t elements, int64_t threads, const ir::Expr& t,
                     const std::function<ir::Stmt(ir::Expr v)>& body);

// A rows × cols tile moved in vectors of `vec` along its columns, shared out over `threads`
// threads (vector v = r·threads + t, loop `prefix`_ld), through `regs` (per_thread() vectors
// per thread) into `shared`, whose rows are `shared_ld` long. `transpose` stores the tile as
// [col][row]. The global -> registers half is the template's own (an im2col, a guarded
// matrix tile), written with for_each_vector() and zero().
struct VectorTile {
  std::string prefix;  // "a" or "b": names of its variables
  int64_t rows, cols, vec, threads;
  ir::Buffer regs, shared;
  bool transpose;
  int64_t shared_ld;

  int64_t vectors() const { return rows * cols / vec; }
  int64_t per_thread() const { return ceil_div(vectors(), threads); }

  // Loop over this thread's vectors; `f` gets the register slot's vector index r and the
  // tile-relative row and column of the vector.
  ir::Stmt for_each_vector(
      const ir::Expr& t,
      const std::function<ir::Stmt(ir::Expr r, ir::Expr row, ir::Expr col)>& f) const;
  // Zeros register vector r (loop `prefix`_z): what a guarded load stores out of bounds.
  ir::Stmt zero(const ir::Expr& r) const;
  // Registers -> shared memory, at `stage_offset` (loop `prefix`_e where transposed).
  ir::Stmt store(const ir::Expr& t, const ir::Expr& stage_offset) const;
};

// The register-tiled inner product: a block's threads form a threads_m × threads_n grid
// (thread_row, thread_col), each accumulating a tm × tn tile of C in `acc`; the rows of a
// thread's tile come in chunks of fm consecutive rows, chunks strided by the thread grid, and
// likewise columns (fn). Per K step of bk the A and B tiles lie in shared memory as
// a_shared [stage][k][m] (rows lda_s long) and b_shared [stage][k][n] (rows ldb_s long), and
// each chunk is read from them as one vector into a_frag / b_frag.
struct RegisterTile {
  int64_t bm, bn, bk, tm, tn, fm, fn;
  int64_t threads_m, threads_n;
  int64_t lda_s, ldb_s;
  bool unroll_k;
  ir::Buffer a_shared, b_shared, acc, a_frag, b_frag;
  ir::Expr thread_row, thread_col;

  // Block-relative row of the thread's i-th row; column of its j-th column.
  ir::Expr tile_row(const ir::Expr& i) const;
  ir::Expr tile_col(const ir::Expr& j) const;
  // Zeros the accumulators.
  ir::Stmt init() const;
  // One K step from shared stage `stage` (loops k, i_frag, j_frag, i, j).
  ir::Stmt compute(const ir::Expr& stage) const;
  // The K loop `k_outer` over k_steps steps: `load(k0)` copies the step starting at column
  // k0 from global memory into registers, `store(stage)` registers into a shared stage. With
  // double_buffer the next step is loaded during this one's compute, one barrier a step.
  ir::Stmt main_loop(int64_t k_steps, bool double_buffer,
                     const std::function<ir::Stmt(ir::Expr k0)>& load,
                     const std::function<ir::Stmt(ir::Expr stage)>& store) const;
  // Accumulators -> the row-major m × n matrix `c`, the block's tile starting at (row0, col0),
  // tails guarded (rows against `m`: a constant, or a GEMM's run-time M); vector stores of fn
  // columns where n keeps them aligned.
  ir::Stmt epilogue(const ir::Buffer& c, const ir::Expr& row0, const ir::Expr& col0,
                    const ir::Expr& m, int64_t n) const;
  // Allocates the shared, accumulator, fragment and copy-register buffers around `body`.
  ir::Stmt allocate(ir::Stmt body, const ir::Buffer& a_regs, const ir::Buffer& b_regs) const;
};

}  // namespace cutune
