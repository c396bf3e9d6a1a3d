#pragma once
// Builders for the Hopper asynchronous-copy intrinsics: mbarrier (shared-memory 64-bit
// barriers with phases, arrival counts and transaction counts), TMA 2-D tensor loads
// (cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes), the async-proxy
// fence and the tensor-map prefetch. Like src/ir/intrinsics.h they are IR Calls of fixed
// names: the code generator emits their inline-PTX definitions (src/codegen/cuda_tma_intrinsics.h)
// inside `#if defined(__CUDA_ARCH__)`, and the emulator's prelude defines the same names
// (src/emulator/device_prelude_tma.h). Kernels that use them need sm_90 or later (sm_90a for
// wgmma alongside).
//
// The CUDA signatures (all `__device__ __forceinline__`):
//   void cutune_mbarrier_init(long long* bar, int count);          count in 1..2^20-1
//   void cutune_mbarrier_arrive(long long* bar);
//   void cutune_mbarrier_arrive_expect_tx(long long* bar, int bytes);  expect-tx, then arrive
//   void cutune_mbarrier_expect_tx(long long* bar, int bytes);     expect-tx only
//   void cutune_mbarrier_wait_parity(long long* bar, int parity);  try_wait.parity in a loop
//   bool cutune_mbarrier_test_wait_parity(long long* bar, int parity);  one non-blocking test
//   void cutune_mbarrier_inval(long long* bar);
//   void cutune_tma_load_2d(void* dst, const cutune_tensor_map& map, long long* bar, int c0,
//                           int c1);  box at coordinates (c0 innermost, c1) to dst
//   void cutune_fence_proxy_async();  fence.proxy.async.shared::cta
//   void cutune_prefetch_tensormap(const cutune_tensor_map& map);
//   bool cutune_elect_one();  elect.sync over the whole warp: true in exactly one lane
//   void cutune_tma_store_2d(const cutune_tensor_map& map, const void* src, int c0, int c1);
//       cp.async.bulk.tensor.2d.global.shared::cta.bulk_group: the box at (c0, c1) from src
//   void cutune_bulk_commit_group();     cp.async.bulk.commit_group
//   void cutune_bulk_wait_group_read_0(); cutune_bulk_wait_group_read_1();
//       cp.async.bulk.wait_group.read 0 (1): at most 0 (1) of the thread's groups still read
//   void cutune_bulk_wait_group();       cp.async.bulk.wait_group 0
//   void cutune_named_barrier_sync(int id, int count);  bar.sync id, count
//   void cutune_stmatrix_x4(void* row, unsigned r0, unsigned r1, unsigned r2, unsigned r3);
//       stmatrix.sync.aligned.m8n8.x4.shared.b16: warp-collective; lane 8j + i gives the
//       address of row i of matrix j (16 bytes, 16-byte aligned), and lane l's r_j holds
//       matrix j's elements (l / 4, 2 (l % 4)) (bits 0-15) and (l / 4, 2 (l % 4) + 1)
//   Thread-block clusters (Kernel::cluster_x > 1):
//   int cutune_cluster_ctarank();        %cluster_ctarank: the block's rank in its cluster
//   void cutune_cluster_arrive();        barrier.cluster.arrive.release
//   void cutune_cluster_wait();          barrier.cluster.wait.acquire
//   void cutune_fence_mbarrier_init();   fence.mbarrier_init.release.cluster
//   void cutune_mbarrier_arrive_cluster(long long* bar, int cta);
//       mapa + mbarrier.arrive.shared::cluster: one arrival on the barrier at
//       bar's offset in the shared memory of the cluster's block of rank `cta`
//   void cutune_tma_load_2d_multicast(void* dst, const cutune_tensor_map& map, long long* bar,
//                                     int c0, int c1, int mask);
//       ...multicast::cluster: the box lands at dst's offset in every block of the cluster
//       whose rank's bit is set in `mask`, and completes its bytes on the barrier at bar's
//       offset in each of them
//
// Clusters (PTX ISA, "barrier.cluster", "mapa", "Distributed shared memory"): the blocks of a
// cluster run at once and each may address the others' shared memory. A multicast copy or a
// remote arrival writes into a peer block, so no block may exit while a peer may still write
// into it (a cluster barrier before the end), and none may use a peer's mbarrier before the
// peer initialised it (init, fence.mbarrier_init, then a cluster barrier: arrive and wait in
// every thread of every block).
//
// Semantics (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier" and
// "cp.async.bulk.tensor"): init sets phase 0, pending arrivals = expected = count, tx-count 0.
// expect_tx adds bytes to the tx-count, an arrive takes one pending arrival, a TMA copy's
// complete_tx subtracts the box's bytes once they are in shared memory; the current phase
// completes when pending arrivals and tx-count are both zero, and the barrier then enters the
// next phase with pending = expected. wait_parity(p) returns once the phase of parity p has
// completed, i.e. while the current phase's parity differs from p (so a fresh barrier's
// wait_parity(1) returns at once). A TMA destination is 128-byte aligned (1024/512/256 bytes with
// the 128/64/32-byte swizzle) and may be read only after a wait on its barrier returns.
//
// The TMA store (PTX ISA, "cp.async.bulk.tensor" and "cp.async.bulk.wait_group") reads the
// box's image from shared memory (laid out, and swizzled, as a load would write it; 128-byte
// aligned, 1024 with the 128-byte swizzle) and writes the elements that lie inside the map's
// dimensions to global memory: rows and columns outside are clipped. It is asynchronous: the
// issuing thread's bulk async-groups (commit_group closes one) track it, and the shared bytes
// may be written again only after that thread's wait_group.read has covered its group (the
// global writes are complete after wait_group without .read, or at the grid's end). The
// shared bytes, written by the generic proxy (st.shared), must be made visible to the async
// proxy first: each writing thread's fence.proxy.async, then a barrier before the issue.
// The named barrier waits until `count` threads (a multiple of 32) of the block have arrived
// at barrier `id` (1..15; 0 is __syncthreads'); threads not in the count go on.
//
// Arguments: `bar` is address_of(a shared Int64 buffer, index); `dst` is address_of(a shared
// buffer, index); `map` is tensor_map_ref(name) of a Kernel::tensor_maps entry.

#include <string>
#include <vector>

#include "src/ir/intrinsics.h"
#include "src/ir/ir.h"

namespace cutune::ir {

// The expression that names tensor-map parameter `name` in an intrinsic's argument list.
Expr tensor_map_ref(const std::string& name);

Stmt mbarrier_init(const Expr& bar, const Expr& count);
Stmt mbarrier_arrive(const Expr& bar);
Stmt mbarrier_arrive_expect_tx(const Expr& bar, const Expr& bytes);
Stmt mbarrier_expect_tx(const Expr& bar, const Expr& bytes);
Stmt mbarrier_wait_parity(const Expr& bar, const Expr& parity);
Expr mbarrier_test_wait_parity(const Expr& bar, const Expr& parity);  // Bool
Stmt mbarrier_inval(const Expr& bar);
Stmt tma_load_2d(const Expr& dst, const Expr& map, const Expr& bar, const Expr& c0, const Expr& c1);
Stmt fence_proxy_async();
Stmt prefetch_tensormap(const Expr& map);
// elect.sync with the full member mask (Bool): true in one lane of the warp, which lane being
// unspecified (the emulator elects lane 31, where the GPU tends to pick lane 0). Warp-collective
// (all 32 lanes together). The way to issue TMA copies from one thread: under
// `warp_uniform(tx / 32) == w && elect_one()` with warp-uniform operands, ptxas issues each copy
// once, where under `tx == 0` it wraps every copy in a loop over the distinct operand values of
// the active lanes (ELECT ... BRA.U.ANY), not knowing that only one lane is active.
inline constexpr const char* kElectOne = "cutune_elect_one";
Expr elect_one();

Stmt tma_store_2d(const Expr& map, const Expr& src, const Expr& c0, const Expr& c1);
Stmt bulk_commit_group();
// wait_group.read `pending` (0 or 1): the sources of every store but those of the `pending`
// most recent groups may be reused.
Stmt bulk_wait_group_read(int pending = 0);
Stmt bulk_wait_group();       // wait_group 0: every store has written global memory
Stmt named_barrier_sync(const Expr& id, int count);  // id Int32 in 1..15
// `row` is address_of a shared 16-bit buffer; `r` four 32-bit words (UInt32 or pack_x2).
Stmt stmatrix_x4(const Expr& row, const std::vector<Expr>& r);

// Clusters (see above). `cta` is an Int32 rank, `mask` an Int32 of the ranks' bits (1..0xffff).
Expr cluster_ctarank();  // Int32
Stmt cluster_arrive();
Stmt cluster_wait();
Stmt fence_mbarrier_init();
Stmt mbarrier_arrive_cluster(const Expr& bar, const Expr& cta);
Stmt tma_load_2d_multicast(const Expr& dst, const Expr& map, const Expr& bar, const Expr& c0,
                           const Expr& c1, const Expr& mask);

// Every name above (tensor_map_ref excluded), for the code generator and feature counts.
const std::vector<std::string>& tma_intrinsic_names();
// Whether `name` is one of them (they need sm_90 or later).
bool is_tma_intrinsic(const std::string& name);

}  // namespace cutune::ir
