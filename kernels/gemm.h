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
// memory, A transposed to [k][m] and rows padded by smem_pad elements against bank conflicts;
// with double_buffer the next tile is fetched into registers while the current one is used,
// with one barrier per step. unroll_k unrolls the inner product over block_k.
//
// A well hand-tuned SGEMM (128×128 block, K step 8, 8×8 per thread as 2×2 chunks of 4×4,
// warp tiling, float4 loads, padded double-buffered shared memory, unrolled K loop) is
// `block_m=128 block_n=128 block_k=8 thread_m=8 thread_n=8 warp_n=8 frag_m=4 frag_n=4
// vec_load=4 smem_pad=4 double_buffer=1 unroll_k=1`: see reference_configs().

#include "kernels/template.h"

namespace cutune {

enum class GemmLayout { nn, nt };

class GemmTemplate final : public Template {
 public:
  GemmTemplate(int64_t m, int64_t n, int64_t k, GemmLayout layout);

  std::string op() const override { return "gemm"; }
  std::string name() const override { return layout_ == GemmLayout::nn ? "gemm_nn" : "gemm_nt"; }
  std::vector<int64_t> shape() const override { return {m_, n_, k_}; }
  const ConfigSpace& space() const override { return space_; }
  ir::Kernel build(const Config& config) const override;
  std::vector<TensorSpec> tensors() const override;
  void reference(std::vector<std::vector<float>>& tensors) const override;
  double flops() const override { return 2.0 * double(m_) * double(n_) * double(k_); }
  int64_t reduction_length() const override { return k_; }
  BaselineSpec baseline() const override {
    return BaselineSpec::of(GemmBaseline{m_, n_, k_, layout_ == GemmLayout::nt});
  }
  std::vector<Config> reference_configs() const override;
  std::vector<std::string> loop_names() const override;
  std::vector<std::string> buffer_names() const override;

 private:
  void define_space();

  int64_t m_, n_, k_;
  GemmLayout layout_;
  ConfigSpace space_;
};

}  // namespace cutune
