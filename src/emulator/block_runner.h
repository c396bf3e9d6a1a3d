#pragma once
// Runs the CUDA threads of a block as fibers on the calling host thread, one block at a time.
//
// Each thread is a fiber (Boost.Context) on its own stack of kStackBytes, with a guard page
// below it. The runner resumes every ready fiber in turn until it reaches a __syncthreads or a
// warp-collective operation, or returns. When none is ready, it first releases each group of
// lanes (warp = 32 consecutive linear thread indices) that all wait at the same collective,
// carrying the operation out for them; when no warp waits, and every live thread waits at the
// same __syncthreads, it releases them all. The block is done when all have returned.
// Anything else, threads that exit while others wait or threads waiting at different
// barriers or collectives, is a barrier divergence: on a GPU the block would hang or behave
// undefinedly.
//
// Each thread also keeps its cp.async copies: recorded at issue with the source bytes, and
// written to their destination only when a wait completes their commit group; and likewise its
// wgmma accumulators, computed at issue and delivered at the wgmma wait that completes them.
// The shared bytes a wgmma reads count as read until that wait (WgmmaReads): a TMA or cp.async
// copy issued onto them before it, or a store (with the sanitizer), is reported, and so is a
// wgmma issued onto bytes a copy in flight still has to write.
// A warpgroup collective (wgmma) is released once the 128 threads of its warpgroup wait at it.
// A lane of the warp (or warpgroup) that waits at an mbarrier is waited for, as a GPU's
// diverged warp reconverges once the waiter's phase completes (an elected thread that waits
// for a ring slot's release before refilling it, while the others go on to the wgmma).
//
// mbarriers and TMA (async_barriers.h, device_prelude_tma.h): a thread that waits for a phase
// not yet complete is suspended at the mbarrier. When no thread is ready and no warp can be
// released, the runner first wakes the waiters whose phase has completed, then, where some
// thread waits at an mbarrier or none at a __syncthreads, delivers every TMA copy in flight
// (its bytes into shared memory, then its complete_tx); otherwise it releases the __syncthreads
// with the copies still in flight (a block barrier does not wait for TMA, so the copies land
// as late as a GPU may land them: at the next mbarrier wait that needs them, or the block's
// end). A thread still waiting at an mbarrier when nothing else helps is a deadlock (reported
// as a barrier divergence, "mbarrier deadlock: ..."). The sanitizer sees a
// completed mbarrier phase as the end of a barrier interval: races between accesses ordered
// only through mbarriers are not reported, and none is invented.
//
// Clusters (cluster_runner.h): the runners of a cluster's blocks, on one host thread, each
// take a step (one pass over its ready threads and one release) in turn, the shared memory of
// the block that steps swapped into the host thread's storage; a block that can do no more
// alone is `blocked`, and the cluster is deadlocked only when every block is. A multicast copy
// joins the copies in flight of each block of its mask (delivered, at the same offset, by that
// block's runner); a remote arrival arrives on the peer's barrier state. A cluster barrier
// (arrive, then wait) is released once every thread of the cluster that has not exited waits
// at it. A remote use of a barrier its block initialised with no cluster barrier since, and a
// remote use of an exited block, fail with the line. A block alone is a cluster of one.
//
// The methods are defined by concern: block_runner.cc (fibers, __syncthreads, failures, the
// scheduling loop), block_runner_cluster.cc (clusters), block_runner_tracked.cc (the
// sanitizer's tracked rule for uninitialised shared reads), block_runner_warp.cc (warp and
// warpgroup collectives),
// block_runner_wgmma.cc (wgmma), block_runner_async.cc (cp.async, mbarriers, TMA loads) and
// block_runner_store.cc (TMA stores, named barriers).

#include <boost/context/fiber.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/emulator/async_barriers.h"
#include "src/emulator/device_abi.h"
#include "src/emulator/emulator.h"
#include "src/emulator/sanitizer.h"
#include "src/emulator/wgmma_reads.h"

namespace cutune::emu {

class BlockRunner {
 public:
  static constexpr size_t kStackBytes = 256 * 1024;

  // `tls_touch` is used to find the kernel object's thread-local block (its shared memory).
  // With `poison_shared` that is filled with 0xFF bytes before each block so that reads of
  // shared memory no thread wrote show up as NaN (or -1). With `sanitize` (an instrumented
  // object, begin_sanitized_run done) the runner drives a BlockSanitizer for this host thread.
  BlockRunner(const LaunchSpec& launch, cutune_emu_abi::ThreadMain entry, void* const* args,
              cutune_emu_abi::TlsTouch tls_touch, bool poison_shared, bool sanitize);
  ~BlockRunner();
  BlockRunner(const BlockRunner&) = delete;
  BlockRunner& operator=(const BlockRunner&) = delete;

  // Why a block did not finish: barrier_divergence or crashed (a misused intrinsic).
  struct Failure {
    EmuStatus status = EmuStatus::ok;
    std::string message;
  };

  // Runs block `block_idx` to completion. Returns ok, or a failure; the block's fibers are
  // then left suspended, and the caller must end the process (the emulator's child) without
  // destroying this runner. Under the sanitizer's tracked rule (sanitizer.h), a block that read
  // shared memory no thread wrote runs again with those bytes holding other values
  // (block_runner_tracked.cc), and the run ends with uninitialized_read where that changes
  // what the block does.
  Failure run(cutune_emu_abi::Dim3 block_idx);

  // Stepping, for a cluster's runner (cluster_runner.h). begin: the block's fibers, its shared
  // memory filled with `fill` (-1: left as it is). step: one pass over the ready threads, then
  // one release; `blocked` when nothing more can happen without another block (`failure`
  // then holds the deadlock to report if no block can go on), `done` when every thread exited.
  struct Step {
    Failure failure;
    bool progressed = false, blocked = false, done = false;
  };
  void begin(cutune_emu_abi::Dim3 block_idx, int fill);
  Step step();
  // Makes this runner block `rank` of the cluster `blocks` (in rank order, this one included),
  // whose cluster barriers `generation` counts.
  void join_cluster(std::vector<BlockRunner*> blocks, unsigned rank, uint64_t* generation);
  // Releases the cluster barrier when every thread of `blocks` that has not exited waits at
  // it (and one does); true when released.
  static bool release_cluster_barrier(const std::vector<BlockRunner*>& blocks);
  std::byte* shared_storage() const { return tls_block_; }
  size_t shared_bytes() const { return tls_bytes_; }
  // This block's sanitizer takes the host thread's accesses from now on (when sanitizing).
  void make_sanitizer_current();
  // Its reads of never-written shared memory in the block run last (0 without a sanitizer).
  uint64_t sanitizer_uninitialised_reads() const {
    return sanitizer_ != nullptr ? sanitizer_->uninitialised_reads() : 0;
  }
  // The uninitialised shared reads of the block run last that the tracked rule let pass.
  uint64_t noted_uninitialised_reads() const { return noted_; }

 private:
  enum class State { ready, at_barrier, at_warp, at_mbarrier, at_named, at_cluster, failed, done };
  struct PendingCopy {
    void* dst;
    uint64_t group;  // the commit group the copy joins: commits made before its issue
    int bytes;
    int line;           // of the cp.async
    uint32_t interval;  // the sanitizer's, at issue
    unsigned char data[16];
  };
  // A wgmma's accumulators of one thread, written to `dst` when a wait completes `group`.
  struct PendingAccumulators {
    void* dst;
    int bytes;
    uint64_t group;
    bool superseded = false;  // a later wgmma of the same registers delivers instead
    std::vector<float> data;
  };
  struct Slot {
    cutune_emu_abi::Thread thread{};
    boost::context::fiber fiber;      // the CUDA thread, while it is suspended
    boost::context::fiber scheduler;  // the runner, while the CUDA thread runs
    State state = State::ready;
    int line = 0;  // of the barrier or collective it waits at
    // at_warp: the collective it waits at
    cutune_emu_abi::WarpCollective collective = nullptr;
    const char* collective_name = "";
    void* collective_args = nullptr;
    unsigned mask = 0;
    unsigned group_lanes = 32;  // 128: a warpgroup collective
    const char* failure = "";         // failed: what the device code misused
    std::string failure_text;         // its storage, when composed at run time
    const void* wait_bar = nullptr;   // at_mbarrier: the barrier and the phase parity
    int wait_parity = 0;
    std::vector<PendingCopy> copies;  // issued, not yet completed, in issue order
    uint64_t commits = 0;
    std::vector<PendingAccumulators> wgmma;  // issued, not yet delivered, in issue order
    uint64_t wgmma_commits = 0;
    bool wgmma_fenced = false;  // a wgmma.fence since the last wait
    uint64_t bulk_commits = 0;  // TMA stores' bulk async-groups closed
    int named_id = 0, named_count = 0;  // at_named: bar.sync id, count
    BlockRunner* runner = nullptr;
    unsigned linear = 0;  // index in the block
    uint64_t cluster_arrivals = 0;  // barrier.cluster.arrive count
  };

  // One run of the block, shared memory first filled with `fill` bytes (-1: left as it is).
  Failure run_once(cutune_emu_abi::Dim3 block_idx, int fill);
  // The tracked rule's reruns of a block that ran once and read uninitialised shared memory.
  Failure track_uninitialised(cutune_emu_abi::Dim3 block_idx);
  static void suspend(Slot* s, State state);
  static void barrier(cutune_emu_abi::Thread* self, int line);
  static void warp_collective(cutune_emu_abi::Thread* self, cutune_emu_abi::WarpCollective fn,
                              const char* name, void* args, unsigned mask, int line);
  static void warpgroup_collective(cutune_emu_abi::Thread* self,
                                   cutune_emu_abi::WarpCollective fn, const char* name, void* args,
                                   int line);
  static const char* wgmma_issue(cutune_emu_abi::Thread* self, void* dst, int bytes,
                                 float** result);
  static void wgmma_fence(cutune_emu_abi::Thread* self);
  static void wgmma_commit(cutune_emu_abi::Thread* self);
  static void wgmma_wait(cutune_emu_abi::Thread* self, int pending);
  static const char* wgmma_reads(cutune_emu_abi::Thread* self, const unsigned* offsets,
                                 int count);
  // Fails `self` when a write of [dst, dst + bytes) that `what` (TMA load, cp.async) issues
  // would change shared memory a wgmma in flight reads.
  void check_write_under_wgmma(cutune_emu_abi::Thread* self, const void* dst, size_t bytes,
                               const char* what, int line);
  static void cp_async(cutune_emu_abi::Thread* self, void* dst, const void* src, int bytes,
                       int src_bytes, int line);
  static void cp_async_commit(cutune_emu_abi::Thread* self);
  static void cp_async_wait(cutune_emu_abi::Thread* self, int pending);
  static void fail(cutune_emu_abi::Thread* self, const char* what);
  [[noreturn]] static void fail_at(cutune_emu_abi::Thread* self, const std::string& what,
                                   int line);
  static void mbarrier_init(cutune_emu_abi::Thread* self, void* bar, int count, int line);
  static void mbarrier_arrive(cutune_emu_abi::Thread* self, void* bar, int count, int tx,
                              int line);
  static bool mbarrier_wait(cutune_emu_abi::Thread* self, void* bar, int parity, bool block,
                            int line);
  static void mbarrier_inval(cutune_emu_abi::Thread* self, void* bar, int line);
  static void tma_load_2d(cutune_emu_abi::Thread* self, void* dst, const void* map, void* bar,
                          int c0, int c1, int line);
  // TMA stores, bulk async-groups, the proxy fence and named barriers
  // (block_runner_store.cc).
  static void tma_store_2d(cutune_emu_abi::Thread* self, const void* map, const void* src, int c0,
                           int c1, int line);
  static void bulk_commit(cutune_emu_abi::Thread* self);
  static void bulk_wait(cutune_emu_abi::Thread* self, int pending, int line);
  static void fence_proxy_async(cutune_emu_abi::Thread* self);
  static void named_barrier(cutune_emu_abi::Thread* self, int id, int count, int line);
  // Clusters (block_runner_cluster.cc).
  static void cluster_arrive(cutune_emu_abi::Thread* self, int line);
  static void cluster_wait(cutune_emu_abi::Thread* self, int line);
  static void mbarrier_arrive_cluster(cutune_emu_abi::Thread* self, void* bar, int cta, int line);
  static void tma_load_2d_multicast(cutune_emu_abi::Thread* self, void* dst, const void* map,
                                    void* bar, int c0, int c1, int mask, int line);
  // The cluster's block `cta` for a remote use of its barrier `bar` by `self` (`what`, for
  // the failure): fails unless the block is in the cluster, has not exited, and initialised the
  // barrier before a cluster barrier that has completed since.
  BlockRunner* peer_for(cutune_emu_abi::Thread* self, int cta, const void* bar, const char* what,
                        int line);
  // Queues the TMA copy of `image` into this block at `dst`, completing on `bar`, issued by
  // thread `thread` of block `from` (the checks of a copy's destination done).
  void queue_tma_copy(cutune_emu_abi::Thread* self, const BlockRunner* from, unsigned thread,
                      void* dst, void* bar, std::vector<unsigned char> image, int line);
  // Releases each named barrier whose count of threads wait at it; sets `released` when it
  // released any. A failure: threads at one id with different counts, or more than the count.
  Failure release_named_barriers(bool& released);
  // A barrier operand must be 8-byte aligned shared memory (where the runner can tell).
  void check_barrier(cutune_emu_abi::Thread* self, const void* bar, int line);
  // Wakes the mbarrier waiters whose phase has completed; true when any woke.
  bool wake_mbarrier_waiters();
  // Delivers every TMA copy in flight, in issue order.
  Failure deliver_tma_copies();
  std::string mbarrier_deadlock(const Slot& waiter) const;
  // The offset of `p` in this block's shared memory, or nullopt when it lies elsewhere.
  std::optional<size_t> shared_offset(const void* p) const;
  std::string shared_address(const void* p) const;

  // Releases the lanes of the warp starting at slot `first` that wait at collectives, each
  // group once all its lanes have arrived; sets `released` when it released any.
  Failure release_warp(size_t first, bool& released);
  // The same for the warpgroup of slot `index`, which waits at a warpgroup collective: released
  // once all 128 threads wait at it; left waiting while some wait at a warp collective.
  Failure release_warpgroup(size_t index, bool& released);
  std::string divergence(const Slot& a, const Slot& b) const;
  // Runs the collective `lead` waits at for the lanes in `mask` (`args`: each lane's
  // arguments), as `lead`'s emulated thread (current_emulated_thread); its misuse, or null.
  static const char* call_collective(const Slot& lead, void* const* args, unsigned mask);
  static std::string dim(const cutune_emu_abi::Dim3& d);  // "(x,y,z)"

  LaunchSpec launch_;
  cutune_emu_abi::ThreadMain entry_;
  void* const* args_;
  std::vector<Slot> slots_;
  std::byte* stacks_ = nullptr;
  size_t stacks_bytes_ = 0;
  std::byte* tls_block_ = nullptr;
  size_t tls_bytes_ = 0;
  bool poison_shared_ = false;
  uint64_t noted_ = 0;
  std::unique_ptr<BlockSanitizer> sanitizer_;
  AsyncBarriers barriers_;
  struct TmaCopy {
    void* dst;
    const void* bar;
    std::vector<unsigned char> data;  // the box image, read at issue
    unsigned thread;                  // the issuing thread (linear in block `from`)
    const BlockRunner* from;          // this block, or a cluster peer's multicast
    int line;
    uint32_t interval;  // the sanitizer's, at issue
  };
  std::vector<TmaCopy> tma_copies_;  // issued, not yet delivered, in issue order
  WgmmaReads wgmma_reads_;           // the shared bytes wgmmas in flight read
  // The shared bytes TMA stores in flight read, keyed by the issuing thread (linear index)
  // and its bulk async-group, until its bulk wait.
  WgmmaReads bulk_reads_;
  std::string collective_failure_;   // a collective's composed failure text
  // The cluster: its blocks in rank order (this one alone by default), this one's rank, the
  // count of cluster barriers released, and per barrier that count at its init.
  std::vector<BlockRunner*> cluster_{this};
  unsigned rank_ = 0;
  uint64_t own_generation_ = 0;
  uint64_t* generation_ = &own_generation_;
  std::unordered_map<const void*, uint64_t> init_generation_;
  bool exited_ = false;  // every thread of the block has exited
};

// The emulated thread that the calling host thread is running, or null between threads.
// Async-signal-safe, for fault reports.
const cutune_emu_abi::Thread* current_emulated_thread();

}  // namespace cutune::emu
