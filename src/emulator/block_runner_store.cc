// BlockRunner's TMA stores, bulk async-groups, proxy fence and named barriers
// (block_runner.h, device_prelude_tma.h).
//
// A store is carried out at issue: its box image is read from shared memory and its in-range
// elements written to global memory at once, which is one of the orders a GPU may take. What
// the emulator cannot see from that order the sanitizer checks: the store's read of shared
// memory is an access of the issuing thread (a write by another thread in the same barrier
// interval races with it); the bytes count as read until the thread's bulk wait, so that a
// write to them before it is reported; and a byte whose generic-proxy writer has not run a
// fence.proxy.async since writing it is reported as not visible to the async proxy.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "src/emulator/block_runner.h"
#include "src/emulator/smem_swizzle.h"
#include "src/emulator/tma_copy.h"

namespace cutune::emu {

void BlockRunner::tma_store_2d(cutune_emu_abi::Thread* self, const void* map, const void* src,
                               int c0, int c1, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  BlockRunner* r = s->runner;
  const auto* rec = static_cast<const cutune_emu_abi::TensorMapRecord*>(map);
  std::vector<TmaStoreElement> elements;
  unsigned long long bytes = 0;
  std::string err = tma_store_elements(*rec, c0, c1, elements, bytes);
  if (!err.empty()) fail_at(self, "TMA store: " + err, line);
  const uintptr_t align = std::max<uintptr_t>(128, cutune_smem::swizzle_repeat_bytes(rec->swizzle));
  if (reinterpret_cast<uintptr_t>(src) % align != 0) {
    fail_at(self,
            fmt::format("TMA store: shared source {} is not {}-byte aligned",
                        r->shared_address(src), align),
            line);
  }
  const std::optional<size_t> offset = r->shared_offset(src);
  if (r->tls_block_ != nullptr && (!offset || *offset + bytes > r->tls_bytes_)) {
    fail_at(self, "TMA store: the source box is not in shared memory", line);
  }
  const unsigned flags = cutune_emu_abi::kAccessWhereIsLine;
  if (r->sanitizer_ != nullptr) {
    r->sanitizer_->tma_store_read(src, static_cast<unsigned>(bytes), line);
  }
  const auto* image = static_cast<const unsigned char*>(src);
  for (const TmaStoreElement& e : elements) {
    if (r->sanitizer_ != nullptr) {
      r->sanitizer_->access(reinterpret_cast<uintptr_t>(e.global), rec->element_bytes,
                            flags | cutune_emu_abi::kAccessWrite, static_cast<uintptr_t>(line));
    }
    std::memcpy(e.global, image + e.image_offset, rec->element_bytes);
  }
  if (offset) {
    const auto at = static_cast<uint32_t>(*offset);
    r->bulk_reads_.add(s->linear, s->bulk_commits, line, &at, 1, static_cast<uint32_t>(bytes));
  }
}

void BlockRunner::bulk_commit(cutune_emu_abi::Thread* self) {
  ++static_cast<Slot*>(self->host)->bulk_commits;
}

// wait_group and wait_group.read alike: every committed group of the thread but the
// `pending` most recent is done.
void BlockRunner::bulk_wait(cutune_emu_abi::Thread* self, int pending, int) {
  Slot* s = static_cast<Slot*>(self->host);
  const auto keep = static_cast<uint64_t>(pending);
  s->runner->bulk_reads_.retire(s->linear, s->bulk_commits > keep ? s->bulk_commits - keep : 0);
}

void BlockRunner::fence_proxy_async(cutune_emu_abi::Thread* self) {
  Slot* s = static_cast<Slot*>(self->host);
  if (s->runner->sanitizer_ != nullptr) s->runner->sanitizer_->proxy_fence(s->linear);
}

void BlockRunner::named_barrier(cutune_emu_abi::Thread* self, int id, int count, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  if (id < 0 || id > 15) fail_at(self, fmt::format("bar.sync with barrier id {}", id), line);
  if (count <= 0 || count % 32 != 0 || count > static_cast<int>(s->runner->slots_.size())) {
    fail_at(self,
            fmt::format("bar.sync {} with a count of {} threads (a multiple of 32, at most the "
                        "block's {})",
                        id, count, s->runner->slots_.size()),
            line);
  }
  s->named_id = id;
  s->named_count = count;
  s->line = line;
  suspend(s, State::at_named);
}

BlockRunner::Failure BlockRunner::release_named_barriers(bool& released) {
  released = false;
  for (int id = 0; id < 16; ++id) {
    const Slot* first = nullptr;
    int there = 0;
    for (const Slot& s : slots_) {
      if (s.state != State::at_named || s.named_id != id) continue;
      if (first == nullptr) first = &s;
      if (s.named_count != first->named_count) {
        return {EmuStatus::barrier_divergence,
                fmt::format("block {}: threads {} and {} wait at bar.sync {} with counts {} and "
                            "{} (lines {} and {})",
                            dim(s.thread.block_idx), dim(first->thread.thread_idx),
                            dim(s.thread.thread_idx), id, first->named_count, s.named_count,
                            first->line, s.line)};
      }
      ++there;
    }
    if (first == nullptr || there < first->named_count) continue;
    if (there > first->named_count) {
      return {
          EmuStatus::barrier_divergence,
          fmt::format("block {}: {} threads wait at bar.sync {}, {} (line {})",
                      dim(first->thread.block_idx), there, id, first->named_count, first->line)};
    }
    // The sanitizer cannot end an interval for some threads only: like a completed mbarrier
    // phase, the barrier ends it for all (races across it are not reported, none is invented).
    if (sanitizer_ != nullptr) sanitizer_->barrier();
    for (Slot& s : slots_) {
      if (s.state == State::at_named && s.named_id == id) s.state = State::ready;
    }
    released = true;
  }
  return {};
}

}  // namespace cutune::emu
