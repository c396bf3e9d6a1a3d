#pragma once
// The building blocks of the Hopper warpgroup-MMA templates (gemm_wgmma, and the implicit-GEMM
// convolutions built on it): a GEMM C[M,N] = A[M,K] · B with fp16 or bf16 inputs and fp32
// accumulation on wgmma.mma_async m64nNk16 for sm_90a, whose A and B slices come from wherever
// a SourceFn (tc_blocks.h) says (a row-major matrix, or an image gathered patch by patch).
// gemm_wgmma.h describes the kernel, its shared layouts and its knobs.
//
// The knobs are defined in wgmma_blocks.cc, the kernel is built in wgmma_builder.cc, on the
// shared tiles of wgmma_tile.h.

#include <optional>
#include <string>
#include <vector>

#include "kernels/tc_blocks.h"
#include "src/ir/ir.h"
#include "src/space/config_space.h"

namespace cutune::wg {

struct WgmmaParams {
  int bm, bn, bk, stages, warpgroups, swizzle, copy_bytes, raster, split_k, epilogue;
  int loads = 0;     // 0: cp.async by every thread; 1: TMA (for the operands that have a view)
  int producer = 0;  // 1: one more warpgroup issues the TMA copies (warp specialisation)
  // 1: a slice's wgmmas stay in flight while the next slice's are issued (wgmma.wait_group
  // 1), and a ring slot is released one slice later; without a producer the ring then keeps
  // stages - 2 slices loading ahead instead of stages - 1 (3 slots at least).
  int mma_pipe = 0;
  // Output tiles each block computes one after another (with a producer): the producer loads
  // the next tile's slices while the consumers store the last one's, and a block's launch and
  // ring fill are paid once for all of them. Block b takes tiles b, b + G, b + 2G, ... of the
  // G = ceil(tiles / tiles_per_block) blocks.
  int tiles_per_block = 1;
  // 1: ping-pong consumers (with several tiles a block): each consumer warpgroup computes whole
  // tiles, the block's tile t in warpgroup t % warpgroups, and the warpgroups take the tensor
  // cores in turn (an order barrier), so that one stores its tile while the next computes.
  // 0: the warpgroups split each tile's rows (cooperative).
  int pingpong = 0;
  // With epilogue 2 and TMA loads, the staged tile goes out by TMA stores: 1 through a whole
  // shared C tile, 2 through two 128-byte columns in turn (define_tma_store_knob).
  int tma_store = 0;
  // 1: persistent tiles (with a producer): the grid is sized from the device (SMs x resident
  // blocks, by whoever launches: src/codegen/launch_grid.h), not from the shape, and block b
  // takes tiles b, b + G, b + 2G, ... of the G blocks launched, in the raster_group order, so
  // that the blocks of one wave work on a compact band of tile rows.
  int persistent = 0;
  // 1 (persistent, fp32 C): where the tiles leave the last wave part empty (tiles % G = r > 0),
  // its r tiles are shared out along K (stream-K): their r x k_slices slices are dealt to the
  // G blocks in contiguous shares of q or q + 1, and a tile a share holds only part of is added
  // into the zeroed C with atomics. No block waits for another, so any order of the blocks is
  // correct.
  int last_wave_split = 0;
  // Thread-block clusters of 2 (define_cluster_knobs): cluster_m 2 pairs the blocks of two
  // tile rows of one tile column, which share B's slice: each block loads half of it by a
  // multicast TMA copy into both; cluster_n 2 pairs two tile columns sharing A the same way.
  int cluster_m = 1, cluster_n = 1;
  int cluster_size() const { return cluster_m * cluster_n; }
  bool tma() const { return loads == 1; }
  int consumer_threads() const { return 128 * warpgroups; }
  int threads() const { return 128 * (warpgroups + producer); }
  // Warpgroups that share a tile's rows: all of them, or one with ping-pong.
  int tile_warpgroups() const { return pingpong == 1 ? 1 : warpgroups; }
  int strips() const { return bm / (64 * tile_warpgroups()); }  // m64 strips per warpgroup
  int acc_per_strip() const { return bn / 2; }
  // Bytes of one row of a layout column, and the elements it holds.
  int row_bytes() const { return swizzle == 0 ? 16 : swizzle; }
  int column_elems() const { return row_bytes() / 2; }
};

WgmmaParams wgmma_params(const Config& c);

// Floats that pad a staged C row (block_n, a multiple of 32, plus this): the fragments' float2
// stores go to the banks by half-warps of four rows, which 8 words of padding put on disjoint
// banks (4 left rows 0 and 1, 2 and 3 sharing banks: two wavefronts a half-warp).
inline constexpr int kStagePad = 8;
// The K splits of a configuration: split_k, times 4 with split_k_wide.
int64_t split_k_of(const Config& c);
// The knobs of a reference configuration: block_m × block_n × block_k tiles of `warpgroups`
// consumer warpgroups, a `stages`-slot ring swizzled by `swizzle` bytes and filled by copies of
// `copy_bytes`, groups of `raster_group` tile rows, no split-K, the given epilogue; the knobs
// defined after these (loads, producer, ...) left to their values when omitted.
nlohmann::json ring_knobs(int block_m, int block_n, int block_k, int stages, int warpgroups,
                          int swizzle, int copy_bytes, int raster_group, int epilogue);
// For a reference configuration: where fewer than 64 output tiles leave most of Hopper's SMs
// idle, as many K splits (2 to 16, doubling) as bring the blocks to a wave of 128 while each
// split keeps at least 4 of the `k_slices`; 1 otherwise. And the knobs that give `splits`.
int64_t reference_split_k(int64_t tiles, int64_t k_slices);
void set_split_k(nlohmann::json& knobs, int64_t splits);

// Defines every knob (block_m/n/k, stages, warpgroups, swizzle, copy_bytes, raster_group,
// split_k, epilogue) and the constraints that hold for any shape: whole m64 strips per
// warpgroup, at most 128 accumulators a thread, the swizzle's row within the tiles (B's
// block_n too when B is MN-major in shared memory).
void define_wgmma_knobs(ConfigSpace& space, bool b_mn_major);

// setmaxnreg's counts with a producer warpgroup: the producer drops to kProducerRegisters, the
// consumers rise to kConsumerRegisters; warpgroups·128·consumer + 128·producer registers must
// fit the 65536 of a block (register_budget_holds).
inline constexpr int kProducerRegisters = 40;
inline constexpr int kConsumerRegisters = 232;
bool register_budget_holds(int warpgroups);

// Defines `loads` (0 cp_async, 1 tma; if omitted 0), `producer` (0, 1; if omitted 0) and
// `mma_pipe` (0, 1; if omitted 0) for a kernel whose A (a_tma) and B (b_tma) slices a 2-D TMA
// box can load, with their constraints: tma only where some operand can take it; copy_bytes
// left at 16 when TMA loads both operands (nothing else copies); a producer only when TMA
// loads both, within the register budget; mma_pipe with a producer or a ring of 3 or more
// slots (without a producer the refill then lags one slot more); the shared memory
// with the ring's mbarriers within the opt-in limit. And `tiles_per_block` (1, 2, 4, 8; if
// omitted 1, defined last so that configurations written before it keep their indices): more
// than 1 with a producer and an unstaged epilogue (the consumers store their own registers;
// a staged one would need a barrier of the consumers alone). And `pingpong` (0, 1; if omitted
// 0, defined after tiles_per_block): with several tiles a block and two consumer warpgroups,
// each holding a whole tile's accumulators (at most 128 a thread). `producer`,
// `tiles_per_block` and `pingpong` are defined only where TMA can load both operands (else
// they could never be other than 0, 1, 0). And `split_k_wide` (0, 1; if omitted 0, defined
// last): 1 multiplies split_k 2 and 4 by 4, to 8 and 16 (split_k_of), for the shapes whose
// M x N tiles are far fewer than the SMs and whose K is long. And last, `persistent` (0, 1;
// if omitted 0): with a producer and an unstaged epilogue, one tile a block by the knob and
// no split-K; and `last_wave_split` (0, 1; if omitted 0): with persistent. Both are defined
// only where TMA can load both operands. The shape's own rules (16-byte global row strides
// for TMA, no more tiles a block than tiles, last_wave_split only into fp32 C) are the
// template's.
void define_wgmma_load_knobs(ConfigSpace& space, bool a_tma, bool b_tma);
// Defines `tma_store` (0, 1, 2; if omitted 0; after every other knob, so that configurations
// written before it keep their indices) for a GEMM whose C is a row-major matrix of n columns
// of fp32 or (out16) 16-bit elements: 1 and 2 turn the staged epilogue (2) into one through
// shared memory in C's type and TMA stores, which also allows several tiles a block. The
// consumers write their accumulators there (128-byte-swizzled columns of 128 bytes by block_m
// rows, which TMA boxes store; the fragments' st.shared, or stmatrix for 16-bit C, without
// bank conflicts), fence.proxy.async, meet at a named barrier of the consumers, and one
// elected thread stores the boxes and commits them; the buffer is written again only after
// that thread's wait_group.read and the barrier. 1: the whole tile (with ping-pong one per
// consumer warpgroup, each with its own barrier), stored at once, the store overlapping the
// next tile's main loop. 2: two columns' buffers (32 KiB at block_m 128) that the tile's
// columns take in turn, each column's store overlapping the next column's writes (a
// wait_group.read 1 before each): for the tiles whose whole C tile does not fit beside the
// ring (128x256 fp32 is 128 KiB), at the price of two barriers a column. Constraints: the
// staged epilogue and TMA loads, C rows a multiple of 16 bytes, block_n whole 128-byte
// columns, the ring and the C buffers within the opt-in shared memory.
void define_tma_store_knob(ConfigSpace& space, int64_t n, bool out16);
// Defines `cluster_m` and `cluster_n` (1, 2; if omitted 1; after every other knob, so that
// configurations written before them keep their indices): thread-block clusters of two blocks
// whose tiles share an operand's slice (2x1: one tile column, B; 1x2: one tile row, A), which
// each block loads half of by multicast TMA into both. Constraints: not both 2; TMA loads and
// a producer warpgroup; no split of the last wave along K (its pieces are per block).
void define_cluster_knobs(ConfigSpace& space);
// The shared bytes of the TMA store's C buffers (0 without it).
int64_t tma_store_bytes(const Config& c, bool out16);
// tiles_per_block at most the M x N tiles of the shape; and, where C is 16-bit (out16), no
// last_wave_split (its pieces add into C with fp32 atomics).
void add_tiles_per_block_constraint(ConfigSpace& space, int64_t m, int64_t n, bool out16 = false);

// Resident blocks per SM a persistent kernel's grid is sized for: 1, since a producer
// warpgroup's setmaxnreg needs __launch_bounds__(threads, 1), which lets ptxas give one block
// the SM's registers.
inline constexpr int kPersistentBlocksPerSm = 1;

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
  // Undefined: m is a constant of the kernel. Else the kernel's scalar parameter M (a Var):
  // every row of A and C is guarded against it and the grid has the tiles of m (the launch
  // follows M by launch_grid.h's at_m), which needs one tile a block, not persistent.
  ir::Expr m_rows;
  ir::DType input;
  bool out16;
  bool b_mn_major;
  ir::Buffer a, b, c;
  tc::SourceFn a_source, b_source;
  std::vector<ir::Buffer> parameters;  // the kernel's global buffers in parameter order
  // Applied to the accumulators in registers before any store path (scalar, pairs, staged,
  // TMA store, atomics); its buffers are among `parameters`, its scalars the kernel's.
  OutputEpilogue epilogue;
  // With loads = tma, an operand with a view is loaded by TMA through a tensor map over it
  // (Kernel::tensor_maps, named "<buffer>_map"), the others by cp.async as with loads =
  // cp_async. The view is the operand as a row-major matrix of `outer` rows of `inner`
  // elements, `row_stride_bytes` apart (a multiple of 16), whose (row0, col0) is the slice
  // origin the SourceFn gets: A's rows are M and columns K; B's are K and N (b_mn_major) or N
  // and K. The box of each copy is one column of the canonical layout (gemm_wgmma.h): swizzle/2
  // elements (8 without swizzle) by the tile's rows, with the descriptors' swizzle, so the
  // copy's image is that column; out-of-range rows and columns arrive as zeros.
  struct TmaView {
    int64_t inner, outer, row_stride_bytes;
  };
  std::optional<TmaView> a_tma, b_tma;

  // Switches that plant a bug in the TMA path, for the tests that must catch it; all off in
  // every template. `wrong_map_swizzle`: the tensor maps do not swizzle while the descriptors
  // read the configuration's swizzle (a no-swizzle configuration is unchanged);
  // `expect_tx_delta`: bytes added to each slot's expect_tx; `skip_full_wait`: consumers read
  // a slot without waiting on its full barrier; `release_in_flight`: with mma_pipe, each
  // slice's slot is released right after its wgmmas' wait_group 1, which leaves them in flight,
  // instead of the previous slice's (without a producer: refilled stages - 1 slices ahead);
  // `skip_turn_wait`: ping-pong consumers start a tile's main loop without waiting for the
  // previous tile's to end; `store_pieces`: the pieces of a persistent kernel's split last wave
  // store into C instead of adding.
  // TMA store (tma_store = 1): `skip_store_read_wait` writes the shared C tile of a block's
  // next tile without the cp.async.bulk.wait_group.read for the previous tile's store;
  // `skip_store_fence` issues the store without the writers' fence.proxy.async;
  // `skip_store_barrier` issues it without the consumers' barrier after their writes.
  struct TestHooks {
    bool wrong_map_swizzle = false;
    int expect_tx_delta = 0;
    bool skip_full_wait = false;
    bool release_in_flight = false;
    bool skip_turn_wait = false;
    bool skip_store_read_wait = false;
    bool skip_store_fence = false;
    bool skip_store_barrier = false;
    bool store_pieces = false;
    // Clusters (cluster_m or cluster_n 2): `wrong_cta_mask` multicasts each block's half of
    // the shared slice into itself alone; `skip_cluster_init_barrier` leaves out the cluster
    // barrier between the mbarriers' init and their first use by a peer; `skip_remote_arrive`
    // releases a ring slot to the block's own producer only, not to the peer's.
    bool wrong_cta_mask = false;
    bool skip_cluster_init_barrier = false;
    bool skip_remote_arrive = false;
  };
  TestHooks hooks;
};

ir::Kernel build_wgmma_gemm(const WgmmaGemmSpec& spec, const WgmmaParams& p);

// The loop and buffer names build_wgmma_gemm can produce besides the globals (feature slots).
std::vector<std::string> wgmma_loop_names();
std::vector<std::string> wgmma_local_buffer_names();

}  // namespace cutune::wg
