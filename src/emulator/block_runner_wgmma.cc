// BlockRunner's wgmma (block_runner.h): accumulators computed at issue and delivered at the
// wait that completes them, and the shared bytes a wgmma in flight reads.
#include "src/emulator/block_runner.h"

#include <cstring>
#include <optional>

#include <fmt/format.h>

namespace cutune::emu {

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
          r->shared_address(c.dst), c.line, dim(c.from->slots_[c.thread].thread.thread_idx));
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

}  // namespace cutune::emu
