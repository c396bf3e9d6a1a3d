#include "src/emulator/block_runner.h"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>

#include <fmt/format.h>

#include "src/emulator/emu_assert.h"

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
    s.thread.tma_store_2d = &BlockRunner::tma_store_2d;
    s.thread.bulk_commit = &BlockRunner::bulk_commit;
    s.thread.bulk_wait = &BlockRunner::bulk_wait;
    s.thread.fence_proxy_async = &BlockRunner::fence_proxy_async;
    s.thread.named_barrier = &BlockRunner::named_barrier;
    s.thread.cluster_rank = 0;
    s.thread.cluster_arrive = &BlockRunner::cluster_arrive;
    s.thread.cluster_wait = &BlockRunner::cluster_wait;
    s.thread.mbarrier_arrive_cluster = &BlockRunner::mbarrier_arrive_cluster;
    s.thread.tma_load_2d_multicast = &BlockRunner::tma_load_2d_multicast;
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
    sanitizer_->watch_bulk_reads(&bulk_reads_);
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

void BlockRunner::fail(cutune_emu_abi::Thread* self, const char* what) {
  Slot* s = static_cast<Slot*>(self->host);
  s->failure = what;
  suspend(s, State::failed);
  CUTUNE_EMU_ASSERT(false, "a failed thread was resumed");
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

std::string BlockRunner::dim(const cutune_emu_abi::Dim3& d) {
  return fmt::format("({},{},{})", d.x, d.y, d.z);
}

const char* BlockRunner::call_collective(const Slot& lead, void* const* args, unsigned mask) {
  t_current = &lead.thread;
  const char* misuse = lead.collective(args, mask);
  t_current = nullptr;
  return misuse;
}

std::string BlockRunner::divergence(const Slot& a, const Slot& b) const {
  auto what = [](const Slot& s) {
    switch (s.state) {
      case State::done:
        return std::string("has exited");
      case State::at_warp:
        return fmt::format("waits at {} (mask {:#010x}) on line {}", s.collective_name, s.mask,
                           s.line);
      case State::at_cluster:
        return fmt::format("waits at the barrier.cluster.wait on line {}", s.line);
      case State::at_named:
        return fmt::format("waits at the bar.sync {}, {} on line {}", s.named_id, s.named_count,
                           s.line);
      default:
        return fmt::format("waits at the __syncthreads on line {}", s.line);
    }
  };
  return fmt::format("barrier divergence in block {}: thread {} {} while thread {} {}",
                     dim(a.thread.block_idx), dim(a.thread.thread_idx), what(a),
                     dim(b.thread.thread_idx), what(b));
}

BlockRunner::Failure BlockRunner::run(cutune_emu_abi::Dim3 block_idx) {
  noted_ = 0;
  Failure f = run_once(block_idx, poison_shared_ ? 0xff : -1);
  if (f.status != EmuStatus::ok || sanitizer_ == nullptr || !sanitizer_->tracks_uninitialised()) {
    return f;
  }
  return track_uninitialised(block_idx);
}

BlockRunner::Failure BlockRunner::run_once(cutune_emu_abi::Dim3 block_idx, int fill) {
  begin(block_idx, fill);
  for (;;) {
    Step st = step();
    if (st.failure.status != EmuStatus::ok && !st.blocked) return st.failure;
    if (st.done) return {};
    // A block alone is a cluster of one: its cluster barrier needs no other block.
    if (st.blocked && !release_cluster_barrier(cluster_)) return st.failure;
  }
}

void BlockRunner::begin(cutune_emu_abi::Dim3 block_idx, int fill) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t per_thread = kStackBytes + page;
  const Dim3& b = launch_.block;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    auto linear = static_cast<unsigned>(i);
    s.thread.thread_idx = {linear % b.x, linear / b.x % b.y, linear / (b.x * b.y)};
    s.thread.block_idx = block_idx;
    s.thread.cluster_rank = rank_;
    s.state = State::ready;
    s.copies.clear();
    s.commits = 0;
    s.wgmma.clear();
    s.wgmma_commits = 0;
    s.wgmma_fenced = false;
    s.bulk_commits = 0;
    s.cluster_arrivals = 0;
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
  if (tls_block_ != nullptr && fill >= 0) std::memset(tls_block_, fill, tls_bytes_);
  if (sanitizer_ != nullptr) sanitizer_->begin_block(block_idx);
  barriers_.clear();
  tma_copies_.clear();
  wgmma_reads_.clear();
  bulk_reads_.clear();
  init_generation_.clear();
  exited_ = false;
}

BlockRunner::Step BlockRunner::step() {
  Step out;
  auto fail = [&](Failure f) {
    out.failure = std::move(f);
    return out;
  };
  auto blocked = [&](std::string message) {
    out.blocked = true;
    out.failure = {EmuStatus::barrier_divergence, std::move(message)};
    return out;
  };
  const cutune_emu_abi::Dim3 block_idx = slots_.front().thread.block_idx;
  for (Slot& s : slots_) {
    if (s.state != State::ready) continue;
    out.progressed = true;
    t_current = &s.thread;
    if (sanitizer_ != nullptr) sanitizer_->enter_thread(s.linear);
    s.fiber = std::move(s.fiber).resume();
    if (sanitizer_ != nullptr) sanitizer_->leave_thread();
    t_current = nullptr;
    if (s.state == State::failed) {
      return fail({EmuStatus::crashed, fmt::format("block {} thread {}: {}", dim(block_idx),
                                                   dim(s.thread.thread_idx), s.failure)});
    }
    if (s.state == State::done && !s.wgmma.empty()) {
      return fail({EmuStatus::crashed,
                   fmt::format("block {} thread {}: exited with {} wgmma result(s) never waited "
                               "for (a missing wgmma.wait_group)",
                               dim(block_idx), dim(s.thread.thread_idx), s.wgmma.size())});
    }
  }
  bool released = false;
  for (size_t first = 0; first < slots_.size(); first += 32) {
    Failure f = release_warp(first, released);
    if (f.status != EmuStatus::ok) return fail(f);
  }
  if (released || wake_mbarrier_waiters()) {
    out.progressed = true;
    return out;
  }
  if (Failure f = release_named_barriers(released); f.status != EmuStatus::ok) return fail(f);
  if (released) {
    out.progressed = true;
    return out;
  }
  // TMA copies land as late as a GPU may land them: a __syncthreads does not wait for them,
  // so where every thread that has not exited waits at one, the barrier is released first
  // and the copies stay in flight until some thread waits at an mbarrier (or the block
  // ends). A read that only the block barrier orders after a copy then sees the bytes from
  // before it, as it can on a GPU.
  bool at_sync = false, at_mbarrier = false, at_cluster = false;
  for (const Slot& s : slots_) {
    at_sync = at_sync || s.state == State::at_barrier;
    at_mbarrier = at_mbarrier || s.state == State::at_mbarrier;
    at_cluster = at_cluster || s.state == State::at_cluster;
  }
  if (!tma_copies_.empty() && !(at_sync && !at_mbarrier)) {
    Failure f = deliver_tma_copies();
    if (f.status != EmuStatus::ok) return fail(f);
    out.progressed = true;
    return out;
  }
  for (const Slot& s : slots_) {
    if (s.state == State::at_mbarrier) return blocked(mbarrier_deadlock(s));
  }

  for (const Slot& s : slots_) {
    if (s.state != State::at_named) continue;
    size_t there = 0;
    for (const Slot& o : slots_) there += o.state == State::at_named && o.named_id == s.named_id;
    return blocked(
        fmt::format("named barrier deadlock in block {}: thread {} waits at the bar.sync "
                    "{}, {} on line {}, where only {} threads wait, and no other thread can "
                    "arrive",
                    dim(block_idx), dim(s.thread.thread_idx), s.named_id, s.named_count, s.line,
                    there));
  }
  if (at_cluster) {
    for (const Slot& s : slots_) {
      if (s.state == State::at_cluster) {
        return blocked(fmt::format(
            "cluster barrier deadlock in block {}: thread {} waits at the barrier.cluster.wait "
            "on line {}, and not every thread of the cluster arrives",
            dim(block_idx), dim(s.thread.thread_idx), s.line));
      }
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
      return fail({EmuStatus::barrier_divergence, divergence(*waiting, s)});
    }
  }
  if (waiting == nullptr) {
    if (sanitizer_ != nullptr) sanitizer_->end_block();
    exited_ = true;
    out.done = true;
    return out;
  }
  if (exited != nullptr) {
    return fail({EmuStatus::barrier_divergence, divergence(*waiting, *exited)});
  }
  if (sanitizer_ != nullptr) sanitizer_->barrier();
  for (Slot& s : slots_) s.state = State::ready;
  out.progressed = true;
  return out;
}

}  // namespace cutune::emu
