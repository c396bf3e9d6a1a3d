// BlockRunner's asynchronous copies and barriers (block_runner.h): cp.async, mbarriers and
// TMA loads.
#include "src/emulator/block_runner.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "src/emulator/smem_swizzle.h"
#include "src/emulator/tma_copy.h"

namespace cutune::emu {

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
  // A peer may use it after the next cluster barrier (peer_for).
  s->runner->init_generation_[bar] = *s->runner->generation_;
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
  r->queue_tma_copy(self, r, s->linear, dst, bar, std::move(image), line);
}

void BlockRunner::queue_tma_copy(cutune_emu_abi::Thread* self, const BlockRunner* from,
                                 unsigned thread, void* dst, void* bar,
                                 std::vector<unsigned char> image, int line) {
  check_write_under_wgmma(self, dst, image.size(), "TMA load", line);
  uint32_t interval = 0;
  if (sanitizer_ != nullptr) {
    interval = sanitizer_->async_issue(dst, nullptr, static_cast<int>(image.size()), 0, line);
  }
  std::string err = barriers_.note_issue(bar, static_cast<int64_t>(image.size()));
  if (!err.empty()) fail_at(self, fmt::format("{} ({})", err, shared_address(bar)), line);
  tma_copies_.push_back(TmaCopy{dst, bar, std::move(image), thread, from, line, interval});
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
      const Slot& issuer = c.from->slots_[c.thread];
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
      dim(waiter.thread.block_idx), dim(waiter.thread.thread_idx), waiter.line, waiter.wait_parity,
      shared_address(waiter.wait_bar), barriers_.describe(waiter.wait_bar), at_mbarrier, at_sync,
      exited);
}

}  // namespace cutune::emu
