#pragma once
// The layout shared by the emulator's host side and the device prelude that is compiled into
// every emulated kernel. Both sides compile this very text (the prelude embeds it), so the
// layouts cannot drift. It includes nothing and uses only what the prelude may use.

namespace cutune_emu_abi {

struct Dim3 {
  unsigned x, y, z;
};

// Carries out one warp-collective operation for the lanes of a warp that take part:
// `lane_args[i]` is lane i's `args` (null for lanes outside `mask`). Runs on the scheduler's
// stack while those lanes are suspended, so it may read and write through their pointers.
// Returns null, or a static description of a misuse, which ends the block as a crash.
using WarpCollective = const char* (*)(void* const* lane_args, unsigned mask);

// One emulated CUDA thread as device code sees it. The host owns it for the duration of a
// block; device code reaches it through the prelude's thread-local `cutune_emu_self`.
struct Thread {
  Dim3 thread_idx;
  Dim3 block_idx;
  Dim3 block_dim;
  Dim3 grid_dim;
  // Suspends the calling thread at the __syncthreads on `line` of the kernel source and
  // returns once every thread of the block has reached it.
  void (*barrier)(Thread* self, int line);
  // Suspends the calling thread at a warp-collective operation (mma, ldmatrix, shuffles,
  // __syncwarp) named `name` on `line`, with `args` pointing at this lane's operands. Once
  // every lane in `mask` waits at the same operation, the scheduler calls `collective` once
  // for them all (see WarpCollective) and resumes them.
  void (*warp_collective)(Thread* self, WarpCollective collective, const char* name, void* args,
                          unsigned mask, int line);
  // cp.async: records a copy of `bytes` bytes (4, 8 or 16) to `dst` whose first `src_bytes`
  // come from `src`, read now, and the rest are zero; the destination is written only when a
  // cp_async_wait completes the copy's commit group.
  // `line`: of the cp.async call in the kernel source, for the sanitizer's reports.
  void (*cp_async)(Thread* self, void* dst, const void* src, int bytes, int src_bytes, int line);
  void (*cp_async_commit)(Thread* self);
  // Completes, in issue order, the copies of all committed groups but the `pending` most recent.
  void (*cp_async_wait)(Thread* self, int pending);
  // The same for an operation of a whole warpgroup (wgmma, setmaxnreg): the 128 threads of
  // linear indices 128g..128g+127 meet, and `collective` gets 128 lane arguments (mask ~0u).
  void (*warpgroup_collective)(Thread* self, WarpCollective collective, const char* name,
                               void* args, int line);
  // wgmma's asynchronous accumulators (called by the wgmma collective for each lane): defers
  // the write of `bytes` bytes to this thread's registers at `dst` to the wgmma_wait that
  // completes the current group, poisons `dst` (0xFF bytes: NaN) meanwhile, and sets `*result`
  // to the buffer that will be written, holding the accumulators' value as of issue (the
  // pending value where an earlier wgmma of the same registers is still in flight). Returns
  // null, or a static description of a misuse.
  const char* (*wgmma_issue)(Thread* self, void* dst, int bytes, float** result);
  void (*wgmma_fence)(Thread* self);
  void (*wgmma_commit)(Thread* self);
  // Delivers, in issue order, the results of all committed groups but the `pending` most
  // recent; fails when the thread wrote pending accumulator registers meanwhile.
  void (*wgmma_wait)(Thread* self, int pending);
  // The shared operands of the wgmma being issued (called by the wgmma collective once, for
  // the warpgroup's first lane, before its wgmma_issue calls): `count` 2-byte elements at these
  // offsets of the shared window. They count as read until the wait that completes the current
  // group: a write to them before that is reported, and so is this wgmma when a TMA or
  // cp.async copy in flight writes them. Returns null, or a description of such a read.
  const char* (*wgmma_reads)(Thread* self, const unsigned* offsets, int count);
  // This block's shared memory as wgmma descriptors address it: the emulated shared window.
  unsigned char* shared_window;
  unsigned long shared_window_bytes;
  // Ends the block with a crash report: device code misused an operation (`what` says how).
  // Never returns.
  void (*fail)(Thread* self, const char* what);
  // mbarrier and TMA (device_prelude_tma.h, src/emulator/async_barriers.h). `bar` is the
  // barrier's 8 bytes in shared memory; the host keeps its state. init: phase 0, `count`
  // expected arrivals. arrive: adds `tx` bytes to the tx-count, then takes `count` arrivals (0:
  // expect-tx only). wait: returns whether the phase of `parity` has completed; with `block`
  // it first suspends the thread until it has (or the block ends as a deadlock).
  void (*mbarrier_init)(Thread* self, void* bar, int count, int line);
  void (*mbarrier_arrive)(Thread* self, void* bar, int count, int tx, int line);
  bool (*mbarrier_wait)(Thread* self, void* bar, int parity, bool block, int line);
  void (*mbarrier_inval)(Thread* self, void* bar, int line);
  // cp.async.bulk.tensor.2d: the box of `map` (a TensorMapRecord) at (c0, c1) is read now and
  // written to `dst` when the block runner delivers it, with a complete_tx on `bar`.
  void (*tma_load_2d)(Thread* self, void* dst, const void* map, void* bar, int c0, int c1,
                      int line);
  // TMA stores (cp.async.bulk.tensor.2d.global.shared::cta.bulk_group): the box of `map` at
  // (c0, c1) is read from `src` and written to global memory now (clipped to the map's
  // dimensions); the source bytes count as read until this thread's bulk wait completes the
  // group the store joins (commit closes it; the wait completes all but the `pending` most
  // recent committed groups). The fence is fence.proxy.async: the sanitizer
  // reports a store of shared bytes whose writer has not fenced since writing them.
  void (*tma_store_2d)(Thread* self, const void* map, const void* src, int c0, int c1, int line);
  void (*bulk_commit)(Thread* self);
  void (*bulk_wait)(Thread* self, int pending, int line);
  void (*fence_proxy_async)(Thread* self);
  // bar.sync id, count: suspends until `count` threads of the block wait at barrier `id`.
  void (*named_barrier)(Thread* self, int id, int count, int line);
  // Thread-block clusters (src/emulator/cluster_runner.h): the block's rank in its cluster;
  // barrier.cluster's arrive and wait (the wait suspends until every thread of the cluster
  // has arrived as often as this one); an arrival on the barrier at `bar`'s offset in block
  // `cta` of the cluster; a TMA load multicast to the blocks of `mask` (dst and bar at the
  // same offsets in each).
  unsigned cluster_rank;
  void (*cluster_arrive)(Thread* self, int line);
  void (*cluster_wait)(Thread* self, int line);
  void (*mbarrier_arrive_cluster)(Thread* self, void* bar, int cta, int line);
  void (*tma_load_2d_multicast)(Thread* self, void* dst, const void* map, void* bar, int c0,
                                int c1, int mask, int line);
  void* host;  // the scheduler's record of this thread; opaque to device code
};

// What the emulator puts in the 128 bytes of a `cutune_tensor_map` kernel argument: the
// tensor map's description (src/ir/tensor_map.h) over the buffer's emulated address.
struct TensorMapRecord {
  unsigned long long magic;  // kTensorMapMagic: built by the emulator
  const void* base;
  unsigned long long dims[2];        // elements
  unsigned long long row_stride;     // bytes
  unsigned box[2];                   // elements
  unsigned element_strides[2];
  unsigned element_bytes;
  unsigned swizzle;  // 0 none, 1 32B, 2 64B, 3 128B
};
inline constexpr unsigned long long kTensorMapMagic = 0x70616d726f736e65ull;
static_assert(sizeof(TensorMapRecord) <= 128, "a tensor map is 128 bytes");

// The sanitizer's view of one memory access (sanitizer.h). An instrumented kernel object
// (compiled with -fsanitize=kernel-address, whose callbacks the prelude defines) calls the
// host's hook, through the object's `cutune_emu_access_hook`, before each load and store:
// `bytes` from `address`, `flags` a set of kAccess* bits, `where` the return address of the
// instrumentation call, or with kAccessWhereIsLine the kernel source line.
using AccessHook = void (*)(unsigned long address, unsigned bytes, unsigned flags,
                            unsigned long where);
inline constexpr unsigned kAccessWrite = 1;
inline constexpr unsigned kAccessWhereIsLine = 2;
inline constexpr unsigned kAccessAtomic = 4;        // read-modify-write, never a race
inline constexpr unsigned kAccessMustBeShared = 8;  // ldmatrix: outside shared memory is a bug
inline constexpr const char* kAccessHookSymbol = "cutune_emu_access_hook";

// A __shared__ array of an instrumented object: its name, element size, and size in bytes
// where that differs from its symbol's (the dynamic array; 0 otherwise). The object exports a
// table of them, ended by a null name; addresses come from its symbol table.
struct SharedArrayInfo {
  const char* name;
  unsigned element_bytes;
  unsigned long bytes;
};
inline constexpr const char* kSharedArraysSymbol = "cutune_emu_shared_arrays";

// Runs one CUDA thread of the kernel to completion. `args` holds, in parameter order, the
// device pointer itself for a pointer parameter and the address of the value for a scalar.
using ThreadMain = void (*)(Thread* self, void* const* args);
// Returns the address of a thread-local variable of the kernel object, which makes the
// calling host thread allocate the object's thread-local (that is, shared-memory) block.
using TlsTouch = void* (*)();

inline constexpr const char* kThreadMainSymbol = "cutune_emu_thread_main";
inline constexpr const char* kTlsTouchSymbol = "cutune_emu_tls_touch";

}  // namespace cutune_emu_abi
