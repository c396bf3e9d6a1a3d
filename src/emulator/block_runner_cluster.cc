// BlockRunner's thread-block clusters (block_runner.h, cluster_runner.h): the cluster barrier,
// remote mbarrier arrivals and multicast TMA loads across the runners of a cluster's blocks.
#include <algorithm>

#include <fmt/format.h>

#include "src/emulator/block_runner.h"
#include "src/emulator/smem_swizzle.h"
#include "src/emulator/tma_copy.h"

namespace cutune::emu {

void BlockRunner::join_cluster(std::vector<BlockRunner*> blocks, unsigned rank,
                               uint64_t* generation) {
  cluster_ = std::move(blocks);
  rank_ = rank;
  generation_ = generation;
}

void BlockRunner::make_sanitizer_current() {
  if (sanitizer_ != nullptr) sanitizer_->make_current();
}

void BlockRunner::cluster_arrive(cutune_emu_abi::Thread* self, int) {
  ++static_cast<Slot*>(self->host)->cluster_arrivals;
}

void BlockRunner::cluster_wait(cutune_emu_abi::Thread* self, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  if (s->cluster_arrivals == 0) {
    fail_at(self, "barrier.cluster.wait without an arrive before it", line);
  }
  s->line = line;
  suspend(s, State::at_cluster);
}

// Every thread of the cluster that has not exited waits: released together, a new barrier
// interval for each block's sanitizer (the cluster barrier orders the blocks' shared accesses
// as a __syncthreads orders a block's). Each waiter has arrived (cluster_wait); a thread that
// waits at the cluster barrier while another one of the cluster waits elsewhere keeps the
// cluster blocked, which its runner reports.
bool BlockRunner::release_cluster_barrier(const std::vector<BlockRunner*>& blocks) {
  bool any = false;
  for (const BlockRunner* b : blocks) {
    for (const Slot& s : b->slots_) {
      if (s.state == State::at_cluster) {
        any = true;
      } else if (s.state != State::done) {
        return false;
      }
    }
  }
  if (!any) return false;
  for (BlockRunner* b : blocks) {
    if (b->sanitizer_ != nullptr) b->sanitizer_->barrier();
    for (Slot& s : b->slots_) {
      if (s.state == State::at_cluster) s.state = State::ready;
    }
  }
  ++*blocks.front()->generation_;
  return true;
}

BlockRunner* BlockRunner::peer_for(cutune_emu_abi::Thread* self, int cta, const void* bar,
                                   const char* what, int line) {
  if (cta < 0 || static_cast<size_t>(cta) >= cluster_.size()) {
    fail_at(self,
            fmt::format("{} names block {} of a cluster of {} blocks", what, cta, cluster_.size()),
            line);
  }
  BlockRunner* peer = cluster_[static_cast<size_t>(cta)];
  if (peer == this) return peer;
  if (peer->exited_) {
    fail_at(self,
            fmt::format("{} into block {} of the cluster, which has exited (a cluster barrier "
                        "before the end keeps every block alive while its peers may write into it)",
                        what, dim(peer->slots_.front().thread.block_idx)),
            line);
  }
  auto it = peer->init_generation_.find(bar);
  if (it == peer->init_generation_.end() || it->second >= *generation_) {
    fail_at(self,
            fmt::format("{} on the mbarrier at {} of block {} of the cluster before a cluster "
                        "barrier that follows its init (mbarrier.init, fence.mbarrier_init, "
                        "then barrier.cluster arrive and wait in every thread)",
                        what, shared_address(bar), dim(peer->slots_.front().thread.block_idx)),
            line);
  }
  return peer;
}

void BlockRunner::mbarrier_arrive_cluster(cutune_emu_abi::Thread* self, void* bar, int cta,
                                          int line) {
  Slot* s = static_cast<Slot*>(self->host);
  BlockRunner* r = s->runner;
  r->check_barrier(self, bar, line);
  BlockRunner* peer = r->peer_for(self, cta, bar, "a remote mbarrier arrive", line);
  const uint64_t before = peer->barriers_.completions();
  std::string err = peer->barriers_.arrive(bar, 1, 0);
  if (!err.empty()) {
    fail_at(self,
            fmt::format("{} ({} of block {} of the cluster)", err, r->shared_address(bar), cta),
            line);
  }
  if (peer->sanitizer_ != nullptr && peer->barriers_.completions() != before) {
    peer->sanitizer_->barrier();
  }
}

void BlockRunner::tma_load_2d_multicast(cutune_emu_abi::Thread* self, void* dst, const void* map,
                                        void* bar, int c0, int c1, int mask, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  BlockRunner* r = s->runner;
  r->check_barrier(self, bar, line);
  const auto size = static_cast<int>(r->cluster_.size());
  if (mask <= 0 || mask >= (1 << size)) {
    fail_at(self,
            fmt::format("TMA multicast: CTA mask {:#x} names blocks outside the cluster of {}",
                        mask, size),
            line);
  }
  const auto* rec = static_cast<const cutune_emu_abi::TensorMapRecord*>(map);
  std::vector<unsigned char> image;
  std::string err = tma_box_image(*rec, c0, c1, image);
  if (!err.empty()) fail_at(self, "TMA multicast load: " + err, line);
  const uintptr_t align = std::max<uintptr_t>(128, cutune_smem::swizzle_repeat_bytes(rec->swizzle));
  if (reinterpret_cast<uintptr_t>(dst) % align != 0) {
    fail_at(self,
            fmt::format("TMA multicast load: shared destination {} is not {}-byte aligned",
                        r->shared_address(dst), align),
            line);
  }
  auto base = reinterpret_cast<uintptr_t>(r->tls_block_);
  auto d = reinterpret_cast<uintptr_t>(dst);
  if (r->tls_block_ != nullptr && (d < base || d + image.size() > base + r->tls_bytes_)) {
    fail_at(self, "TMA multicast load: the destination box is not in shared memory", line);
  }
  // Every block of the cluster keeps its shared memory at the same host addresses (swapped in
  // when it runs), so the copy lands at dst and completes on bar in each.
  for (int cta = 0; cta < size; ++cta) {
    if ((mask >> cta & 1) == 0) continue;
    BlockRunner* peer = r->peer_for(self, cta, bar, "a TMA multicast load", line);
    peer->queue_tma_copy(self, r, s->linear, dst, bar, image, line);
  }
}

}  // namespace cutune::emu
