#pragma once
// fp32 GEMM: C[M,N] = A[M,K] · B[K,N] (layout nn), or C = A · Bᵀ with B stored [N,K]
// (layout nt, as dense layers use). Row-major throughout; any M, N, K >= 1 (tails guarded).
//
// The kernel tiles C into block_m × block_n blocks (grid x over N, y over M). Each block's
// threads form a (block_m/thread_m) × (block_n/thread_n) grid, arranged either row-major or
// warp by warp (warp_n lanes along N, 32/warp_n along M), and each thread accumulates a
// thread_m × thread_n register tile. Rows of a thread's tile come in chunks of frag_m
// consecutive rows, chunks strided by the thread grid (frag_m = thread_m: contiguous;
// frag_m = 1: fully interleaved), and likewise columns; a chunk is read from shared memory as
// one vector. Per K step of block_k, the block copies its A and B tiles from global memory
// (vectors of vec_load elements along the contiguous dimension) through registers into shared
// memory, A transposed to [k][m] and rows padded by smem_pad elements against bank conflicts
// (smem_pad = -1: the conflict-free rule below); with double_buffer the next tile is fetched into
// registers while the current one is used, with one barrier per step. unroll_k unrolls the inner
// product over block_k. min_blocks (1, 2) is __launch_bounds__'s second argument: ptxas fits
// registers for that many blocks per SM.
//
// The conflict-free padding rule (smem_pad = -1). A transposed tile [k][rows] (A always, B in
// layout nt) is written by scalar stores: vector v of a warp's 32 consecutive vectors holds
// tile row v / P, k-columns c·vec .. c·vec+vec-1 with c = v % P and P = block_k / vec, so one
// store instruction (element e) writes word (c·vec + e)·L + row for R = 32 / P consecutive
// rows and all P chunks c, L being the padded row length. Its bank is
// (c·vec·L + row + e·L) mod 32: the 32 words fall in 32 distinct banks exactly when the P
// chunks are R banks apart, i.e. when vec·L ≡ R·u (mod 32) with u odd. L ≡ 32 / block_k
// (mod 32) gives vec·L ≡ 32·vec / block_k = R (mod 32) for every vec at once, so the rule pads
// each transposed tile's rows to the smallest such L >= rows (block_k 4: L ≡ 8, 8: L ≡ 4,
// 16: L ≡ 2, 32: L ≡ 1). Reads need no rule: a fragment read takes frag_m (frag_n) consecutive
// words of one k row, and a warp's reads of one row are contiguous whatever L. The untransposed
// B tile of layout nn is stored in vectors along its rows and is left unpadded, which keeps a
// phase's words contiguous. The price: L is a multiple of 32 / block_k only, so at block_k 16
// and 32 the fragments are at most 2 and 1 words (the alignment constraint), not LDS.128; pad
// 4 keeps LDS.128 with 2-way conflicting stores there. Both are in the space.
//
// A well hand-tuned SGEMM (128×128 block, K step 8, 8×8 per thread as 2×2 chunks of 4×4,
// warp tiling, float4 loads, padded double-buffered shared memory, unrolled K loop) is
// `block_m=128 block_n=128 block_k=8 thread_m=8 thread_n=8 warp_n=8 frag_m=4 frag_n=4
// vec_load=4 smem_pad=4 double_buffer=1 unroll_k=1`: see reference_configs().

#include "kernels/output_epilogue.h"
#include "kernels/template.h"

namespace cutune {

// smem_pad's value for the conflict-free rule.
constexpr int64_t kSmemPadConflictFree = -1;
// The smallest L >= rows with L ≡ 32 / block_k (mod 32): the rule's row length of a
// transposed [k][rows] tile (block_k a power of two <= 32).
int64_t conflict_free_row_length(int64_t rows, int64_t block_k);
// The row lengths of A_shared ([k][block_m]) and B_shared ([k][block_n]) of a configuration.
struct GemmSharedRows {
  int64_t a, b;
};
GemmSharedRows gemm_shared_rows(const Config& config, GemmLayout layout);

class GemmTemplate final : public Template {
 public:
  // runtime_m: the kernels take M as a scalar and serve any M (Template::runtime_m).
  // `epilogue` is applied to each thread's accumulators before the store (output_epilogue.h).
  GemmTemplate(int64_t m, int64_t n, int64_t k, GemmLayout layout, bool runtime_m = false,
               Epilogue epilogue = {});

  std::string op() const override { return "gemm"; }
  std::string name() const override {
    return std::string(layout_ == GemmLayout::nn ? "gemm_nn" : "gemm_nt") +
           epilogue_.name_suffix() + (runtime_m_ ? "_dynm" : "");
  }
  std::optional<int64_t> runtime_m() const override {
    return runtime_m_ ? std::optional<int64_t>(m_) : std::nullopt;
  }
  MRule runtime_m_rule(const Config& config) const override;
  std::vector<int64_t> shape() const override { return {m_, n_, k_}; }
  const ConfigSpace& space() const override { return space_; }
  ir::Kernel build(const Config& config) const override;
  std::vector<TensorSpec> tensors() const override;
  std::vector<ScalarSpec> scalars() const override;
  void reference(std::vector<std::vector<float>>& tensors) const override;
  double flops() const override { return 2.0 * double(m_) * double(n_) * double(k_); }
  int64_t reduction_length() const override { return k_; }
  BaselineSpec baseline() const override;
  std::vector<Config> reference_configs() const override;
  std::vector<std::string> loop_names() const override;
  std::vector<std::string> buffer_names() const override;

 private:
  void define_space();

  int64_t m_, n_, k_;
  GemmLayout layout_;
  bool runtime_m_ = false;
  Epilogue epilogue_;
  ConfigSpace space_;
};

}  // namespace cutune
