#include "src/emulator/block_runner.h"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <new>

#include <fmt/format.h>

#include "src/emulator/emu_assert.h"
#include "src/emulator/smem_swizzle.h"
#include "src/emulator/tma_copy.h"

namespace cutune::emu {

namespace {

thread_local const cutune_emu_abi::Thread* t_current = nullptr;

// Hands Boost.Context a stack the runner already owns; fibers never free their stacks.
struct BorrowedStack {
  void* top;
  size_t bytes;
  boost::context::stack_context allocate() {
    boost::context::stack_context sc;
    sc.sp = top;
    sc.size = bytes;
    return sc;
  }
  void deallocate(boost::context::stack_context&) noexcept {}
};

struct TlsSearch {
  uintptr_t code_address;
  std::byte* block = nullptr;
  size_t bytes = 0;
};

// Finds the loaded object that contains `code_address` and the calling thread's instance of
// its thread-local segment.
int find_tls(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<TlsSearch*>(data);
  bool contains = false;
  size_t tls_bytes = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && search->code_address >= begin &&
        search->code_address < begin + ph.p_memsz) {
      contains = true;
    }
    if (ph.p_type == PT_TLS) tls_bytes = ph.p_memsz;
  }
  if (!contains) return 0;
  search->block = static_cast<std::byte*>(info->dlpi_tls_data);
  search->bytes = search->block == nullptr ? 0 : tls_bytes;
  return 1;
}

std::string dim(const cutune_emu_abi::Dim3& d) { return fmt::format("({},{},{})", d.x, d.y, d.z); }

}  // namespace

const cutune_emu_abi::Thread* current_emulated_thread() { return t_current; }

BlockRunner::BlockRunner(const LaunchSpec& launch, cutune_emu_abi::ThreadMain entry,
                         void* const* args, cutune_emu_abi::TlsTouch tls_touch, bool poison_shared,
                         bool sanitize)
    : launch_(launch),
      entry_(entry),
      args_(args),
      slots_(launch.block.volume()),
      poison_shared_(poison_shared) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t per_thread = kStackBytes + page;
  stacks_bytes_ = per_thread * slots_.size();
  void* m = mmap(nullptr, stacks_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  stacks_ = static_cast<std::byte*>(m);
  for (size_t i = 0; i < slots_.size(); ++i) {
    // Stacks grow down: the guard page sits below each one.
    mprotect(stacks_ + i * per_thread, page, PROT_NONE);
  }
  for (Slot& s : slots_) {
    s.thread.block_dim = {launch.block.x, launch.block.y, launch.block.z};
    s.thread.grid_dim = {launch.grid.x, launch.grid.y, launch.grid.z};
    s.thread.barrier = &BlockRunner::barrier;
    s.thread.warp_collective = &BlockRunner::warp_collective;
    s.thread.warpgroup_collective = &BlockRunner::warpgroup_collective;
    s.thread.wgmma_issue = &BlockRunner::wgmma_issue;
    s.thread.wgmma_fence = &BlockRunner::wgmma_fence;
    s.thread.wgmma_commit = &BlockRunner::wgmma_commit;
    s.thread.wgmma_wait = &BlockRunner::wgmma_wait;
    s.thread.wgmma_reads = &BlockRunner::wgmma_reads;
    s.thread.cp_async = &BlockRunner::cp_async;
    s.thread.cp_async_commit = &BlockRunner::cp_async_commit;
    s.thread.cp_async_wait = &BlockRunner::cp_async_wait;
    s.thread.fail = &BlockRunner::fail;
    s.thread.mbarrier_init = &BlockRunner::mbarrier_init;
    s.thread.mbarrier_arrive = &BlockRunner::mbarrier_arrive;
    s.thread.mbarrier_wait = &BlockRunner::mbarrier_wait;
    s.thread.mbarrier_inval = &BlockRunner::mbarrier_inval;
    s.thread.tma_load_2d = &BlockRunner::tma_load_2d;
    s.thread.host = &s;
    s.runner = this;
    s.linear = static_cast<unsigned>(&s - slots_.data());
  }
  // Always looked up: wgmma descriptors address shared memory relative to this block.
  if (tls_touch != nullptr) {
    tls_touch();
    TlsSearch search{reinterpret_cast<uintptr_t>(tls_touch)};
    dl_iterate_phdr(find_tls, &search);
    tls_block_ = search.block;
    tls_bytes_ = search.bytes;
  }
  for (Slot& s : slots_) {
    s.thread.shared_window = reinterpret_cast<unsigned char*>(tls_block_);
    s.thread.shared_window_bytes = tls_bytes_;
  }
  if (sanitize) {
    sanitizer_ = std::make_unique<BlockSanitizer>(tls_block_, tls_bytes_,
                                                  static_cast<unsigned>(slots_.size()));
    sanitizer_->watch_wgmma_reads(&wgmma_reads_);
  }
}

BlockRunner::~BlockRunner() {
  for (Slot& s : slots_) CUTUNE_EMU_ASSERT(!s.fiber, "a block runner destroyed mid-block");
  munmap(stacks_, stacks_bytes_);
}

void BlockRunner::suspend(Slot* s, State state) {
  s->state = state;
  s->scheduler = std::move(s->scheduler).resume();
}

void BlockRunner::barrier(cutune_emu_abi::Thread* self, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  s->line = line;
  suspend(s, State::at_barrier);
}

void BlockRunner::warp_collective(cutune_emu_abi::Thread* self, cutune_emu_abi::WarpCollective fn,
                                  const char* name, void* args, unsigned mask, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  s->line = line;
  s->collective = fn;
  s->collective_name = name;
  s->collective_args = args;
  s->mask = mask;
  s->group_lanes = 32;
  suspend(s, State::at_warp);
}

void BlockRunner::warpgroup_collective(cutune_emu_abi::Thread* self,
                                       cutune_emu_abi::WarpCollective fn, const char* name,
                                       void* args, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  s->line = line;
  s->collective = fn;
  s->collective_name = name;
  s->collective_args = args;
  s->mask = ~0u;
  s->group_lanes = 128;
  suspend(s, State::at_warp);
}

const char* BlockRunner::wgmma_issue(cutune_emu_abi::Thread* self, void* dst, int bytes,
                                     float** result) {
  Slot* s = static_cast<Slot*>(self->host);
  if (!s->wgmma_fenced) {
    return "wgmma.mma_async without a wgmma.fence since the thread's last wgmma.wait_group";
  }
  auto* begin = static_cast<unsigned char*>(dst);
  PendingAccumulators* chained = nullptr;
  for (PendingAccumulators& p : s->wgmma) {
    auto* other = static_cast<unsigned char*>(p.dst);
    if (p.superseded || other + p.bytes <= begin || begin + bytes <= other) continue;
    // The ISA orders accumulator accesses of wgmmas of one shape on the same registers.
    if (p.dst != dst || p.bytes != bytes) {
      return "accumulator registers overlap those of an unfinished wgmma of another shape";
    }
    chained = &p;
  }
  PendingAccumulators next{dst, bytes, s->wgmma_commits, false, {}};
  next.data.resize(static_cast<size_t>(bytes) / sizeof(float));
  if (chained != nullptr) {
    next.data = chained->data;
    chained->superseded = true;
  } else {
    std::memcpy(next.data.data(), dst, static_cast<size_t>(bytes));
  }
  std::memset(dst, 0xff, static_cast<size_t>(bytes));
  s->wgmma.push_back(std::move(next));
  *result = s->wgmma.back().data.data();
  return nullptr;
}

void BlockRunner::wgmma_fence(cutune_emu_abi::Thread* self) {
  static_cast<Slot*>(self->host)->wgmma_fenced = true;
}

void BlockRunner::wgmma_commit(cutune_emu_abi::Thread* self) {
  ++static_cast<Slot*>(self->host)->wgmma_commits;
}

void BlockRunner::wgmma_wait(cutune_emu_abi::Thread* self, int pending) {
  Slot* s = static_cast<Slot*>(self->host);
  uint64_t keep = static_cast<uint64_t>(pending);
  uint64_t complete_below = s->wgmma_commits > keep ? s->wgmma_commits - keep : 0;
  size_t kept = 0;
  for (size_t i = 0; i < s->wgmma.size(); ++i) {
    PendingAccumulators& p = s->wgmma[i];
    if (p.group >= complete_below) {
      // Not onto itself: a vector moved onto itself is left empty.
      if (kept != i) s->wgmma[kept] = std::move(p);
      ++kept;
      continue;
    }
    if (p.superseded) continue;
    const auto* regs = static_cast<const unsigned char*>(p.dst);
    for (int i = 0; i < p.bytes; ++i) {
      if (regs[i] != 0xff) {
        fail(self,
             "the accumulator registers of an unfinished wgmma were written before the "
             "wgmma.wait_group that completes it");
      }
    }
    std::memcpy(p.dst, p.data.data(), static_cast<size_t>(p.bytes));
  }
  s->wgmma.resize(kept);
  s->wgmma_fenced = false;
  s->runner->wgmma_reads_.retire(s->linear / 128, complete_below);
}

const char* BlockRunner::wgmma_reads(cutune_emu_abi::Thread* self, const unsigned* offsets,
                                     int count) {
  Slot* s = static_cast<Slot*>(self->host);
  BlockRunner* r = s->runner;
  const WgmmaReads::Pending& p = r->wgmma_reads_.add(s->linear / 128, s->wgmma_commits, s->line,
                                                     offsets, static_cast<size_t>(count), 2);
  auto overlaps = [&](const void* dst, size_t bytes) {
    const std::optional<size_t> at = r->shared_offset(dst);
    return at && WgmmaReads::reads(p, *at, bytes);
  };
  // The copies in flight land at some time before their completion: a wgmma issued onto
  // their bytes reads them before they are written.
  for (const TmaCopy& c : r->tma_copies_) {
    if (overlaps(c.dst, c.data.size())) {
      r->collective_failure_ = fmt::format(
          "the wgmma reads shared memory {} that the TMA load on line {} (thread {}) has not "
          "written yet: the load is in flight (a read before its full barrier's phase completes)",
          r->shared_address(c.dst), c.line, dim(r->slots_[c.thread].thread.thread_idx));
      return r->collective_failure_.c_str();
    }
  }
  for (const Slot& other : r->slots_) {
    for (const PendingCopy& c : other.copies) {
      if (overlaps(c.dst, static_cast<size_t>(c.bytes))) {
        r->collective_failure_ = fmt::format(
            "the wgmma reads shared memory {} that the cp.async on line {} (thread {}) has not "
            "written yet (a read before the wait that completes its group)",
            r->shared_address(c.dst), c.line, dim(other.thread.thread_idx));
        return r->collective_failure_.c_str();
      }
    }
  }
  return nullptr;
}

void BlockRunner::check_write_under_wgmma(cutune_emu_abi::Thread* self, const void* dst,
                                          size_t bytes, const char* what, int line) {
  const std::optional<size_t> at = shared_offset(dst);
  const WgmmaReads::Pending* p = at ? wgmma_reads_.find(*at, bytes) : nullptr;
  if (p == nullptr) return;
  fail_at(self,
          fmt::format("{}: writes shared memory {} that the wgmma on line {} (warpgroup {}) still "
                      "reads: no wgmma.wait_group has completed it yet (a slot released too early)",
                      what, shared_address(dst), p->line, p->warpgroup),
          line);
}

void BlockRunner::fail(cutune_emu_abi::Thread* self, const char* what) {
  Slot* s = static_cast<Slot*>(self->host);
  s->failure = what;
  suspend(s, State::failed);
  CUTUNE_EMU_ASSERT(false, "a failed thread was resumed");
}

void BlockRunner::cp_async(cutune_emu_abi::Thread* self, void* dst, const void* src, int bytes,
                           int src_bytes, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  BlockSanitizer* san = s->runner->sanitizer_.get();
  uint32_t interval = 0;
  if (san != nullptr && src_bytes >= 0 && src_bytes <= bytes) {
    interval = san->async_issue(dst, src, bytes, src_bytes, line);
  }
  if (src_bytes < 0 || src_bytes > bytes) fail(self, "cp.async: src_bytes outside 0..size");
  auto misaligned = [&](const void* p) { return reinterpret_cast<uintptr_t>(p) % bytes != 0; };
  if (misaligned(dst)) fail(self, "cp.async: shared destination not aligned to the copy size");
  if (src_bytes > 0 && misaligned(src)) {
    fail(self, "cp.async: global source not aligned to the copy size");
  }
  s->runner->check_write_under_wgmma(self, dst, static_cast<size_t>(bytes), "cp.async", line);
  PendingCopy& c = s->copies.emplace_back();
  c.dst = dst;
  c.group = s->commits;
  c.bytes = bytes;
  c.line = line;
  c.interval = interval;
  // A source beyond its buffer faults here, in the issuing thread, as it would on a GPU.
  if (src_bytes > 0) std::memcpy(c.data, src, static_cast<size_t>(src_bytes));
  std::memset(c.data + src_bytes, 0, static_cast<size_t>(bytes - src_bytes));
}

void BlockRunner::cp_async_commit(cutune_emu_abi::Thread* self) {
  ++static_cast<Slot*>(self->host)->commits;
}

void BlockRunner::cp_async_wait(cutune_emu_abi::Thread* self, int pending) {
  Slot* s = static_cast<Slot*>(self->host);
  uint64_t keep = static_cast<uint64_t>(pending);
  uint64_t complete_below = s->commits > keep ? s->commits - keep : 0;
  size_t kept = 0;
  BlockSanitizer* san = s->runner->sanitizer_.get();
  for (PendingCopy& c : s->copies) {
    if (c.group < complete_below) {
      if (san != nullptr) san->async_write(s->linear, c.dst, c.bytes, c.interval, c.line);
      std::memcpy(c.dst, c.data, static_cast<size_t>(c.bytes));
    } else {
      s->copies[kept++] = c;
    }
  }
  s->copies.resize(kept);
}

void BlockRunner::fail_at(cutune_emu_abi::Thread* self, const std::string& what, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  s->failure_text = fmt::format("{} on line {}", what, line);
  s->failure = s->failure_text.c_str();
  suspend(s, State::failed);
  CUTUNE_EMU_ASSERT(false, "a failed thread was resumed");
  std::abort();
}

std::optional<size_t> BlockRunner::shared_offset(const void* p) const {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto base = reinterpret_cast<uintptr_t>(tls_block_);
  if (tls_block_ == nullptr || a < base || a >= base + tls_bytes_) return std::nullopt;
  return a - base;
}

std::string BlockRunner::shared_address(const void* p) const {
  if (const std::optional<size_t> at = shared_offset(p)) {
    return fmt::format("shared byte {:#x}", *at);
  }
  return fmt::format("{:#x}", reinterpret_cast<uintptr_t>(p));
}

void BlockRunner::check_barrier(cutune_emu_abi::Thread* self, const void* bar, int line) {
  auto a = reinterpret_cast<uintptr_t>(bar);
  if (a % 8 != 0) fail_at(self, fmt::format("mbarrier at {:#x} is not 8-byte aligned", a), line);
  auto base = reinterpret_cast<uintptr_t>(tls_block_);
  if (tls_block_ != nullptr && (a < base || a + 8 > base + tls_bytes_)) {
    fail_at(self, fmt::format("mbarrier at {:#x} is not in shared memory", a), line);
  }
}

void BlockRunner::mbarrier_init(cutune_emu_abi::Thread* self, void* bar, int count, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  s->runner->check_barrier(self, bar, line);
  std::string err = s->runner->barriers_.init(bar, count);
  if (!err.empty()) fail_at(self, err, line);
}

void BlockRunner::mbarrier_arrive(cutune_emu_abi::Thread* self, void* bar, int count, int tx,
                                  int line) {
  Slot* s = static_cast<Slot*>(self->host);
  BlockRunner* r = s->runner;
  r->check_barrier(self, bar, line);
  const uint64_t before = r->barriers_.completions();
  std::string err = r->barriers_.arrive(bar, count, tx);
  if (!err.empty()) fail_at(self, fmt::format("{} ({})", err, r->shared_address(bar)), line);
  if (r->sanitizer_ != nullptr && r->barriers_.completions() != before) r->sanitizer_->barrier();
}

bool BlockRunner::mbarrier_wait(cutune_emu_abi::Thread* self, void* bar, int parity, bool block,
                                int line) {
  Slot* s = static_cast<Slot*>(self->host);
  BlockRunner* r = s->runner;
  r->check_barrier(self, bar, line);
  if (r->barriers_.find(bar) == nullptr) {
    fail_at(self,
            fmt::format("mbarrier wait on {}, which is not initialised", r->shared_address(bar)),
            line);
  }
  if (parity != 0 && parity != 1) {
    fail_at(self, fmt::format("mbarrier wait with parity {} (must be 0 or 1)", parity), line);
  }
  if (r->barriers_.phase_done(bar, parity)) return true;
  s->wait_bar = bar;
  s->wait_parity = parity;
  s->line = line;
  suspend(s, State::at_mbarrier);
  return block;
}

void BlockRunner::mbarrier_inval(cutune_emu_abi::Thread* self, void* bar, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  s->runner->check_barrier(self, bar, line);
  std::string err = s->runner->barriers_.inval(bar);
  if (!err.empty()) fail_at(self, err, line);
}

void BlockRunner::tma_load_2d(cutune_emu_abi::Thread* self, void* dst, const void* map, void* bar,
                              int c0, int c1, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  BlockRunner* r = s->runner;
  r->check_barrier(self, bar, line);
  const auto* rec = static_cast<const cutune_emu_abi::TensorMapRecord*>(map);
  std::vector<unsigned char> image;
  std::string err = tma_box_image(*rec, c0, c1, image);
  if (!err.empty()) fail_at(self, "TMA load: " + err, line);
  const uintptr_t align = std::max<uintptr_t>(128, cutune_smem::swizzle_repeat_bytes(rec->swizzle));
  if (reinterpret_cast<uintptr_t>(dst) % align != 0) {
    fail_at(self,
            fmt::format("TMA load: shared destination {} is not {}-byte aligned",
                        r->shared_address(dst), align),
            line);
  }
  auto base = reinterpret_cast<uintptr_t>(r->tls_block_);
  auto d = reinterpret_cast<uintptr_t>(dst);
  if (r->tls_block_ != nullptr && (d < base || d + image.size() > base + r->tls_bytes_)) {
    fail_at(self, "TMA load: the destination box is not in shared memory", line);
  }
  r->check_write_under_wgmma(self, dst, image.size(), "TMA load", line);
  uint32_t interval = 0;
  if (r->sanitizer_ != nullptr) {
    interval = r->sanitizer_->async_issue(dst, nullptr, static_cast<int>(image.size()), 0, line);
  }
  err = r->barriers_.note_issue(bar, static_cast<int64_t>(image.size()));
  if (!err.empty()) fail_at(self, fmt::format("{} ({})", err, r->shared_address(bar)), line);
  r->tma_copies_.push_back(TmaCopy{dst, bar, std::move(image), s->linear, line, interval});
}

bool BlockRunner::wake_mbarrier_waiters() {
  bool woke = false;
  for (Slot& s : slots_) {
    if (s.state == State::at_mbarrier && barriers_.phase_done(s.wait_bar, s.wait_parity)) {
      s.state = State::ready;
      woke = true;
    }
  }
  return woke;
}

BlockRunner::Failure BlockRunner::deliver_tma_copies() {
  std::vector<TmaCopy> copies = std::move(tma_copies_);
  tma_copies_.clear();
  for (TmaCopy& c : copies) {
    const auto bytes = static_cast<int>(c.data.size());
    if (sanitizer_ != nullptr)
      sanitizer_->async_write(c.thread, c.dst, bytes, c.interval, c.line, true);
    std::memcpy(c.dst, c.data.data(), c.data.size());
    const uint64_t before = barriers_.completions();
    std::string err = barriers_.complete_tx(c.bar, bytes);
    if (!err.empty()) {
      const Slot& issuer = slots_[c.thread];
      return {EmuStatus::crashed,
              fmt::format("block {} thread {}: the TMA load on line {} ({} bytes, barrier at {}): "
                          "{}",
                          dim(issuer.thread.block_idx), dim(issuer.thread.thread_idx), c.line,
                          bytes, shared_address(c.bar), err)};
    }
    if (sanitizer_ != nullptr && barriers_.completions() != before) sanitizer_->barrier();
  }
  return {};
}

std::string BlockRunner::mbarrier_deadlock(const Slot& waiter) const {
  size_t at_mbarrier = 0, at_sync = 0, exited = 0;
  for (const Slot& s : slots_) {
    at_mbarrier += s.state == State::at_mbarrier;
    at_sync += s.state == State::at_barrier;
    exited += s.state == State::done;
  }
  return fmt::format(
      "mbarrier deadlock in block {}: thread {} waits on line {} for the phase of parity {} of "
      "the barrier at {} ({}), and no thread or TMA copy in flight can complete it ({} threads "
      "wait at mbarriers, {} at __syncthreads, {} have exited)",
      dim(waiter.thread.block_idx), dim(waiter.thread.thread_idx), waiter.line,
      waiter.wait_parity, shared_address(waiter.wait_bar), barriers_.describe(waiter.wait_bar),
      at_mbarrier, at_sync, exited);
}

std::string BlockRunner::divergence(const Slot& a, const Slot& b) const {
  auto what = [](const Slot& s) {
    switch (s.state) {
      case State::done:
        return std::string("has exited");
      case State::at_warp:
        return fmt::format("waits at {} (mask {:#010x}) on line {}", s.collective_name, s.mask,
                           s.line);
      default:
        return fmt::format("waits at the __syncthreads on line {}", s.line);
    }
  };
  return fmt::format("barrier divergence in block {}: thread {} {} while thread {} {}",
                     dim(a.thread.block_idx), dim(a.thread.thread_idx), what(a),
                     dim(b.thread.thread_idx), what(b));
}

BlockRunner::Failure BlockRunner::release_warp(size_t first, bool& released) {
  constexpr size_t kWarp = 32;
  size_t lanes = std::min(kWarp, slots_.size() - first);
  unsigned handled = 0;
  for (size_t i = 0; i < lanes; ++i) {
    Slot& lead = slots_[first + i];
    if (lead.state != State::at_warp || (handled >> i & 1u) != 0) continue;
    if (lead.group_lanes == 128) return release_warpgroup(first + i, released);
    unsigned mask = lead.mask;
    if ((mask >> i & 1u) == 0) {
      return {EmuStatus::crashed,
              fmt::format("block {} thread {}: {} on line {} with mask {:#010x}, which leaves "
                          "out the calling lane {}",
                          dim(lead.thread.block_idx), dim(lead.thread.thread_idx),
                          lead.collective_name, lead.line, mask, i)};
    }
    void* args[kWarp] = {};
    for (size_t j = 0; j < kWarp; ++j) {
      if ((mask >> j & 1u) == 0) continue;
      if (j >= lanes) {
        return {EmuStatus::barrier_divergence,
                fmt::format("barrier divergence in block {}: thread {} waits at {} on line {} "
                            "with mask {:#010x}, but its warp has only {} threads",
                            dim(lead.thread.block_idx), dim(lead.thread.thread_idx),
                            lead.collective_name, lead.line, mask, lanes)};
      }
      const Slot& other = slots_[first + j];
      if (other.state == State::at_mbarrier) return {};  // as in release_warpgroup
      if (other.state != State::at_warp || other.collective != lead.collective ||
          other.line != lead.line || other.mask != mask || other.group_lanes != 32) {
        return {EmuStatus::barrier_divergence, divergence(lead, other)};
      }
      args[j] = other.collective_args;
    }
    handled |= mask;
    t_current = &lead.thread;
    const char* misuse = lead.collective(args, mask);
    t_current = nullptr;
    if (misuse != nullptr) {
      return {EmuStatus::crashed,
              fmt::format("block {} warp {}: {} on line {}: {}", dim(lead.thread.block_idx),
                          first / kWarp, lead.collective_name, lead.line, misuse)};
    }
    for (size_t j = 0; j < lanes; ++j) {
      if ((mask >> j & 1u) != 0) slots_[first + j].state = State::ready;
    }
    if (sanitizer_ != nullptr && std::strcmp(lead.collective_name, "__syncwarp") == 0) {
      sanitizer_->warp_sync(static_cast<unsigned>(first / kWarp));
    }
    released = true;
  }
  return {};
}

BlockRunner::Failure BlockRunner::release_warpgroup(size_t index, bool& released) {
  constexpr size_t kGroup = 128;
  const size_t first = index / kGroup * kGroup;
  const Slot& lead = slots_[index];
  if (first + kGroup > slots_.size()) {
    return {EmuStatus::barrier_divergence,
            fmt::format("barrier divergence in block {}: thread {} waits at the warpgroup "
                        "operation {} on line {}, but its warpgroup has only {} threads",
                        dim(lead.thread.block_idx), dim(lead.thread.thread_idx),
                        lead.collective_name, lead.line, slots_.size() - first)};
  }
  void* args[kGroup] = {};
  for (size_t j = 0; j < kGroup; ++j) {
    const Slot& other = slots_[first + j];
    // A warp of the group still at a warp collective is released first, in this round; a
    // thread at an mbarrier is woken first once its phase completes (an elected thread that
    // waits for a slot's release while the others reach the wgmma), else it is a deadlock.
    if (other.state == State::at_warp && other.group_lanes == 32) return {};
    if (other.state == State::at_mbarrier) return {};
    // Released from a warp collective earlier in this round (an elect.sync before the
    // wgmma): it runs on before the group is looked at again.
    if (other.state == State::ready) return {};
    if (other.state != State::at_warp || other.collective != lead.collective ||
        other.line != lead.line) {
      return {EmuStatus::barrier_divergence, divergence(lead, other)};
    }
    args[j] = other.collective_args;
  }
  t_current = &lead.thread;
  const char* misuse = lead.collective(args, ~0u);
  t_current = nullptr;
  if (misuse != nullptr) {
    return {EmuStatus::crashed,
            fmt::format("block {} warpgroup {}: {} on line {}: {}", dim(lead.thread.block_idx),
                        first / kGroup, lead.collective_name, lead.line, misuse)};
  }
  for (size_t j = 0; j < kGroup; ++j) slots_[first + j].state = State::ready;
  released = true;
  return {};
}

BlockRunner::Failure BlockRunner::run(cutune_emu_abi::Dim3 block_idx) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t per_thread = kStackBytes + page;
  const Dim3& b = launch_.block;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    auto linear = static_cast<unsigned>(i);
    s.thread.thread_idx = {linear % b.x, linear / b.x % b.y, linear / (b.x * b.y)};
    s.thread.block_idx = block_idx;
    s.state = State::ready;
    s.copies.clear();
    s.commits = 0;
    s.wgmma.clear();
    s.wgmma_commits = 0;
    s.wgmma_fenced = false;
    s.wait_bar = nullptr;
    void* top = stacks_ + (i + 1) * per_thread;
    s.fiber = boost::context::fiber(std::allocator_arg, BorrowedStack{top, kStackBytes},
                                    [this, &s](boost::context::fiber&& scheduler) {
                                      s.scheduler = std::move(scheduler);
                                      entry_(&s.thread, args_);
                                      s.state = State::done;
                                      return std::move(s.scheduler);
                                    });
  }
  if (tls_block_ != nullptr && poison_shared_) std::memset(tls_block_, 0xff, tls_bytes_);
  if (sanitizer_ != nullptr) sanitizer_->begin_block(block_idx);
  barriers_.clear();
  tma_copies_.clear();
  wgmma_reads_.clear();

  for (;;) {
    for (Slot& s : slots_) {
      if (s.state != State::ready) continue;
      t_current = &s.thread;
      if (sanitizer_ != nullptr) sanitizer_->enter_thread(s.linear);
      s.fiber = std::move(s.fiber).resume();
      if (sanitizer_ != nullptr) sanitizer_->leave_thread();
      t_current = nullptr;
      if (s.state == State::failed) {
        return {EmuStatus::crashed, fmt::format("block {} thread {}: {}", dim(block_idx),
                                                dim(s.thread.thread_idx), s.failure)};
      }
      if (s.state == State::done && !s.wgmma.empty()) {
        return {EmuStatus::crashed,
                fmt::format("block {} thread {}: exited with {} wgmma result(s) never waited "
                            "for (a missing wgmma.wait_group)",
                            dim(block_idx), dim(s.thread.thread_idx), s.wgmma.size())};
      }
    }
    bool released = false;
    for (size_t first = 0; first < slots_.size(); first += 32) {
      Failure f = release_warp(first, released);
      if (f.status != EmuStatus::ok) return f;
    }
    if (released) continue;
    if (wake_mbarrier_waiters()) continue;
    // TMA copies land as late as a GPU may land them: a __syncthreads does not wait for them,
    // so where every thread that has not exited waits at one, the barrier is released first
    // and the copies stay in flight until some thread waits at an mbarrier (or the block
    // ends). A read that only the block barrier orders after a copy then sees the bytes from
    // before it, as it can on a GPU.
    bool at_sync = false, at_mbarrier = false;
    for (const Slot& s : slots_) {
      at_sync = at_sync || s.state == State::at_barrier;
      at_mbarrier = at_mbarrier || s.state == State::at_mbarrier;
    }
    if (!tma_copies_.empty() && !(at_sync && !at_mbarrier)) {
      Failure f = deliver_tma_copies();
      if (f.status != EmuStatus::ok) return f;
      continue;
    }
    for (const Slot& s : slots_) {
      if (s.state == State::at_mbarrier) {
        return {EmuStatus::barrier_divergence, mbarrier_deadlock(s)};
      }
    }

    // No thread is ready and none waits at a collective: all wait at __syncthreads or are done.
    const Slot* waiting = nullptr;
    const Slot* exited = nullptr;
    for (const Slot& s : slots_) {
      if (s.state == State::done) {
        if (exited == nullptr) exited = &s;
      } else if (waiting == nullptr) {
        waiting = &s;
      } else if (s.line != waiting->line) {
        return {EmuStatus::barrier_divergence, divergence(*waiting, s)};
      }
    }
    if (waiting == nullptr) {
      if (sanitizer_ != nullptr) sanitizer_->end_block();
      return {};
    }
    if (exited != nullptr) return {EmuStatus::barrier_divergence, divergence(*waiting, *exited)};
    if (sanitizer_ != nullptr) sanitizer_->barrier();
    for (Slot& s : slots_) s.state = State::ready;
  }
}

}  // namespace cutune::emu
