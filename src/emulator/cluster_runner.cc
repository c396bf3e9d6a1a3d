#include "src/emulator/cluster_runner.h"

#include <cstring>

namespace cutune::emu {

ClusterRunner::ClusterRunner(unsigned size, const LaunchSpec& launch,
                             cutune_emu_abi::ThreadMain entry, void* const* args,
                             cutune_emu_abi::TlsTouch tls_touch, bool poison_shared, bool sanitize)
    : poison_shared_(poison_shared) {
  std::vector<BlockRunner*> order;
  for (unsigned i = 0; i < size; ++i) {
    blocks_.push_back(
        std::make_unique<BlockRunner>(launch, entry, args, tls_touch, poison_shared, sanitize));
    order.push_back(blocks_.back().get());
  }
  for (unsigned i = 0; i < size; ++i) blocks_[i]->join_cluster(order, i, &generation_);
  images_.resize(size);
  for (std::vector<std::byte>& image : images_) image.resize(blocks_.front()->shared_bytes());
}

void ClusterRunner::make_live(size_t i) {
  BlockRunner& b = *blocks_[i];
  if (i != live_ && b.shared_bytes() > 0) {
    std::memcpy(images_[live_].data(), b.shared_storage(), b.shared_bytes());
    std::memcpy(b.shared_storage(), images_[i].data(), b.shared_bytes());
  }
  live_ = i;
  b.make_sanitizer_current();
}

BlockRunner::Failure ClusterRunner::run(cutune_emu_abi::Dim3 first) {
  const size_t n = blocks_.size();
  generation_ = 0;
  noted_ = 0;
  for (size_t i = 0; i < n; ++i) {
    make_live(i);
    cutune_emu_abi::Dim3 block = first;
    block.x += static_cast<unsigned>(i);
    blocks_[i]->begin(block, poison_shared_ ? 0xff : -1);
  }
  std::vector<bool> done(n, false);
  for (;;) {
    bool progressed = false, all_done = true;
    BlockRunner::Failure blocked;
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      make_live(i);
      BlockRunner::Step st = blocks_[i]->step();
      if (st.failure.status != EmuStatus::ok && !st.blocked) return st.failure;
      if (st.done) {
        done[i] = true;
        progressed = true;
        noted_ += blocks_[i]->sanitizer_uninitialised_reads();
        continue;
      }
      all_done = false;
      progressed = progressed || st.progressed;
      if (st.blocked && blocked.status == EmuStatus::ok) blocked = st.failure;
    }
    if (all_done) return {};
    if (progressed) continue;
    std::vector<BlockRunner*> all;
    for (const std::unique_ptr<BlockRunner>& b : blocks_) all.push_back(b.get());
    if (BlockRunner::release_cluster_barrier(all)) continue;
    return blocked;
  }
}

}  // namespace cutune::emu
