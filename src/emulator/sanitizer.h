#pragma once
// The emulator's sanitizer: checks every memory access of an instrumented kernel object
// (compile_kernel_object with sanitize) as the block runs.
//
// The object calls the access hook before each load and store (device_prelude.h). The hook
// classifies the address: the running host thread's shared memory (the object's thread-local
// block), a global buffer (GuardedBuffers), or anything else (stacks, arguments: ignored).
//  - Bounds (memcheck): a shared access must lie in one __shared__ array, not in the red zones
//    and gaps between them; a global access in its buffer's data, before its start too.
//    ldmatrix rows and cp.async destinations must be shared, cp.async sources global.
//  - Uninitialised shared reads (memcheck): a byte read in a block before any thread of that
//    block wrote it. Under the strict rule (SanitizerRun::strict_uninitialised), reported at the
//    end of the barrier interval, so that when another thread writes the byte later in the same
//    interval it is reported as the race it is. Under the tracked rule (the default), counted,
//    and the block is run again with the never-written shared bytes holding other values
//    (BlockRunner, block_runner_tracked.cc): the read fails only when its value reaches what
//    the block does, i.e. the block's global stores differ (an output) or the sequence of its
//    shared and global accesses does (a branch or an address); otherwise it is a note
//    (EmuResult::uninitialised_reads). A block that uses global atomics cannot be run again and
//    falls back to the strict rule.
//  - Races (racecheck), per block: time is cut into barrier intervals (a __syncthreads ends
//    one) and, per warp, into __syncwarp epochs. Per shared element (per byte in the dynamic
//    array; an access of part of an element counts as one of all of it) the shadow keeps the last
//    writer (thread, interval, epoch, location) and the readers of the latest interval (one
//    thread, or "several" with the warp when they share one). A write and another access of
//    the same byte by a different thread in the same interval, not ordered by a __syncwarp of
//    their warp, is a race. cp.async copies write at the wait that completes them, and race
//    with any access by another thread since their issue. Atomics never race. A store to
//    shared bytes that a wgmma in flight reads (before the wgmma.wait_group that completes it)
//    races with that wgmma, and so does one to shared bytes that a TMA store in flight reads
//    (before the issuing thread's cp.async.bulk.wait_group). A TMA store that reads bytes whose
//    writer has run no fence.proxy.async since writing them is a race between the proxies.
//  - Races between blocks (racecheck): per element of each writable global buffer, the last
//    writing block and the reading block(s); two blocks writing the same element, or one
//    reading what another writes, without atomics, is a race.
//  - Sampled blocks: unless EmulatorOptions::sanitize_all_blocks, only the blocks of
//    sampled_blocks run instrumented (first, before the others); the rest run from the plain
//    object, caught only by guard pages, canaries and poisoned shared memory. Between blocks,
//    the checks above then cover the sampled blocks against each other; against the others,
//    end_unchecked_blocks finds an element a sampled block wrote or read whose value the others
//    then changed (a write of the value already there goes unseen, and so do races among the
//    unsampled blocks themselves).
// The first finding ends the run (through `report`) with its status and a message naming the
// kernel, the buffer, the element, both threads or blocks and the source locations. Locations
// are kernel source lines, or the object's code offsets written "@pc:HEX@", which the caller
// turns into lines afterwards (resolve_source_lines, source_lines.h) since that needs the
// object's line tables.
//
// sanitizer.cc holds the run and the checks of global memory, sanitizer_shared.cc those of a
// block's shared memory; shared_layout.h reads where an object keeps its shared arrays.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/emulator/device_abi.h"
#include "src/emulator/emulator.h"
#include "src/emulator/guarded_buffers.h"
#include "src/emulator/shared_layout.h"
#include "src/emulator/wgmma_reads.h"

namespace cutune::emu {

// What the sanitizer needs for one run; set in the child before any block runs.
struct SanitizerRun {
  bool racecheck = true;
  bool memcheck = true;
  // Any read of never-written shared memory fails (true), or only one whose value reaches an
  // output, a branch or an address (false: the tracked rule, see the file comment).
  bool strict_uninitialised = false;
  std::string kernel_name;
  LaunchSpec launch;
  const GuardedBuffers* buffers = nullptr;
  uintptr_t object_base = 0;
  const SharedLayout* layout = nullptr;
  [[noreturn]] void (*report)(EmuStatus status, const char* message) = nullptr;
};

// Sets up the run-wide state (the global buffers' shadows) in the child.
void begin_sanitized_run(const SanitizerRun& run);

// The blocks checked when not all are (linear indices, ascending, each once): every corner of
// the grid (each dimension at its first or last index, where the tails of the bounds checks
// meet), the neighbour of the first corner and of the last one along each dimension (adjacent
// blocks, whose tiles are where overlapping writes would be), and the middle block.
std::vector<uint64_t> sampled_blocks(const Dim3& grid);

// Around the blocks that run uninstrumented, after the sampled ones (see the file comment):
// begin notes the writable buffers' contents, end reports (through `report`) the first element
// that a sampled block wrote or read and the others changed.
void begin_unchecked_blocks();
void end_unchecked_blocks();
// The hook to store into the object's cutune_emu_access_hook.
cutune_emu_abi::AccessHook sanitizer_access_hook();

// The per-host-thread part: the shadow of that thread's shared memory, and the position of the
// block it runs. A BlockRunner drives it.
class BlockSanitizer {
 public:
  BlockSanitizer(std::byte* tls_block, size_t tls_bytes, unsigned threads);
  ~BlockSanitizer();
  BlockSanitizer(const BlockSanitizer&) = delete;
  BlockSanitizer& operator=(const BlockSanitizer&) = delete;

  void begin_block(cutune_emu_abi::Dim3 block_idx);
  // The host thread's accesses go to this one from now on (the last one made, until then):
  // the runners of a cluster's blocks switch as their blocks take turns.
  void make_current();
  void end_block();
  // The thread that runs from now on (linear index in the block), or none (the scheduler).
  void enter_thread(unsigned linear) { current_ = static_cast<int>(linear); }
  void leave_thread() { current_ = -1; }
  // Every thread passed a __syncthreads: a new interval.
  void barrier();
  // The lanes of warp `warp` passed a __syncwarp.
  void warp_sync(unsigned warp) { ++warp_epoch_[warp]; }
  // cp.async by the current thread: checks the addresses, notes the global read; returns the
  // interval to pass to async_write when the copy completes.
  uint32_t async_issue(const void* dst, const void* src, int bytes, int src_bytes, int line);
  // An asynchronous copy issued by `thread` in interval `issued` lands: a cp.async at its wait,
  // or (tma) a TMA load when the block runner delivers it.
  void async_write(unsigned thread, const void* dst, int bytes, uint32_t issued, int line,
                   bool tma = false);

  void access(uintptr_t address, unsigned bytes, unsigned flags, uintptr_t where);

  // The tracked rule (the file comment; block_runner_tracked.cc drives it). Of the block run
  // last: its reads of never-written shared memory, and whether it used global atomics (then
  // it cannot be run again).
  uint64_t uninitialised_reads() const { return uninit_reads_; }
  // The block run last read uninitialised shared memory, and the rule is the tracked one.
  bool tracks_uninitialised() const;
  bool used_global_atomics() const { return global_atomics_; }
  // What the block did that the values it read may change: a hash of its shared and global
  // accesses in order, and the bytes its global stores left (read now, at the block's end), as
  // well as those of every writable global location it read.
  struct Outcome {
    uint64_t trace = 0;
    size_t stores = 0;
    std::vector<std::byte> stored;
  };
  Outcome outcome() const;
  // Puts back what the block's global stores overwrote (every writable global location it
  // accessed: as it was before the block), so that it can run again.
  void undo_global_stores();
  // The global element the `byte`th byte of Outcome::stored was stored to ("C[17]").
  std::string stored_element(size_t byte) const;
  // Ends the run with uninitialized_read: the block's first uninitialised read and `why`.
  [[noreturn]] void report_tracked(const std::string& why) const;
  // A finding while the block runs again with shared bytes filled with `fill` is reported
  // with those words in front (empty: none).
  void set_rerun_context(std::string context);
  // The block runner's record of the shared bytes wgmmas in flight read: a store to them is a
  // race with the wgmma (racecheck).
  void watch_wgmma_reads(const WgmmaReads* reads) { wgmma_reads_ = reads; }
  // The same for the shared bytes TMA stores in flight read (until their bulk wait).
  void watch_bulk_reads(const WgmmaReads* reads) { bulk_reads_ = reads; }
  // A TMA store by the current thread reads [src, src + bytes) of shared memory now: bounds,
  // a race with another thread's write in this interval, and a byte whose writer has not run
  // fence.proxy.async since writing it (the async proxy may not see the write).
  void tma_store_read(const void* src, unsigned bytes, int line);
  // Thread `linear` ran fence.proxy.async: its shared writes so far are visible to the async
  // proxy.
  void proxy_fence(unsigned linear);

 private:
  struct ByteShadow {
    uint32_t w_interval, r_interval;
    uint32_t w_where, r_where;
    uint32_t w_epoch, r_epoch;
    uint16_t w_thread, r_thread;  // r_thread kSeveral: more than one reader
    uint16_t r_warp, r_first;     // r_warp kSeveral: readers in several warps
    uint32_t w_seq;               // the generic write's number (write_seq_), 0 for async ones
  };
  static constexpr uint16_t kSeveral = 0xffff;
  static constexpr uint16_t kIgnored = 0xffff;  // in kind_: a variable of the prelude

  void shared_access(size_t offset, unsigned bytes, unsigned flags, uint32_t where);
  void global_access(uintptr_t address, unsigned bytes, unsigned flags, uint32_t where);
  bool shared_in_bounds(size_t offset, unsigned bytes) const;
  [[noreturn]] void report_shared_bounds(size_t offset, unsigned bytes, unsigned flags,
                                         uint32_t where) const;
  // The race of the current thread's access, or (async) of the asynchronous copy `writer`
  // issued, with thread `other`'s.
  enum class Async { no, cp_async, tma };
  [[noreturn]] void report_race(size_t offset, bool write, uint32_t where, uint16_t other,
                                bool other_write, bool several, uint32_t other_where,
                                Async async = Async::no, unsigned writer = 0) const;
  [[noreturn]] void report_uninitialised() const;
  [[noreturn]] void report_bulk_write(size_t offset, uint32_t where,
                                      const WgmmaReads::Pending& store) const;
  [[noreturn]] void report_wgmma_write(size_t offset, uint32_t where,
                                       const WgmmaReads::Pending& wgmma) const;
  std::string thread_text(unsigned linear) const;
  std::string block_text() const;
  std::string shared_element(size_t offset) const;
  uint32_t where_of(unsigned flags, uintptr_t where) const;
  // Adds an access (shared offset or global address) to the tracked rule's hash.
  void trace(uintptr_t at, unsigned bytes, unsigned flags) {
    uint64_t x = (at * 0x9e3779b97f4a7c15ull) ^ (uint64_t{bytes} << 40) ^
                 (uint64_t{flags & 0xf} << 56) ^ static_cast<uint64_t>(current_ + 1);
    trace_ = (trace_ ^ x) * 0x100000001b3ull + 0x51;
  }

  std::byte* tls_block_;
  size_t tls_bytes_;
  unsigned threads_;
  // Per array: its shadow, one entry per granule of 2^shift bytes (the element size, up to 16;
  // single bytes for the dynamic array, which holds arrays of several types).
  struct ArrayShadow {
    size_t offset = 0, bytes = 0;
    unsigned shift = 0;
    size_t base = 0;  // index of its first entry in shadow_
  };
  std::vector<ArrayShadow> arrays_;
  std::vector<uint16_t> kind_;  // per byte: 0 gap or red zone, 1 + array index, or kIgnored
  ByteShadow* shadow_ = nullptr;
  size_t shadow_bytes_ = 0;
  std::vector<uint32_t> warp_epoch_;
  uint32_t interval_ = 0;
  uint32_t block_start_ = 0;
  uint64_t block_linear_ = 0;
  cutune_emu_abi::Dim3 block_idx_{};
  int current_ = -1;
  const WgmmaReads* wgmma_reads_ = nullptr;
  const WgmmaReads* bulk_reads_ = nullptr;
  // Generic shared writes are numbered (ByteShadow::w_seq); fence_seq_[t] is the number of the
  // last one made before thread t's latest fence.proxy.async.
  uint32_t write_seq_ = 0;
  std::vector<uint32_t> fence_seq_;
  // The first read of a byte no thread of the block had written, this interval (strict) or
  // this block (tracked).
  bool suspect_ = false;
  size_t suspect_offset_ = 0;
  unsigned suspect_thread_ = 0;
  uint32_t suspect_where_ = 0;
  // The tracked rule: this block's uninitialised reads, the hash of its accesses, and its
  // accesses of writable global memory (address, size, the bytes there before the access at
  // old_bytes_[old]) in order.
  uint64_t uninit_reads_ = 0;
  uint64_t trace_ = 0;
  bool global_atomics_ = false;
  struct Store {
    uintptr_t address;
    size_t old;
    unsigned bytes;
  };
  std::vector<Store> stores_;
  std::vector<std::byte> old_bytes_;
};

}  // namespace cutune::emu
