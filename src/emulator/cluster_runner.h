#pragma once
// Runs the blocks of one thread-block cluster (LaunchSpec::cluster_x > 1) together on the
// calling host thread: a BlockRunner per block, in rank order, each taking a step in turn
// (BlockRunner::step). The host thread has one shared-memory storage (the kernel object's
// thread-local block), so each block keeps an image of its shared memory here, swapped in
// before its runner steps and out after: device code, descriptors and barrier keys see every
// block's shared memory at the same addresses, which is how a multicast copy lands "at the
// same offset" in each block of its mask. The cluster is done when every block is; it is
// deadlocked when no block can go on and no cluster barrier can be released.
//
// Under the sanitizer each block has its own BlockSanitizer, made current while it steps.
// The tracked rule's reruns (block_runner_tracked.cc) run one block again alone, which a
// cluster's blocks cannot: their uninitialised shared reads are counted as notes only (the
// strict rule, SanitizerRun::strict_uninitialised, still reports them).

#include <cstddef>
#include <memory>
#include <vector>

#include "src/emulator/block_runner.h"

namespace cutune::emu {

class ClusterRunner {
 public:
  // `size` blocks a cluster (2 or more); the other arguments are BlockRunner's.
  ClusterRunner(unsigned size, const LaunchSpec& launch, cutune_emu_abi::ThreadMain entry,
                void* const* args, cutune_emu_abi::TlsTouch tls_touch, bool poison_shared,
                bool sanitize);
  ClusterRunner(const ClusterRunner&) = delete;
  ClusterRunner& operator=(const ClusterRunner&) = delete;

  // Runs the cluster whose block of rank 0 is `first` (first.x a multiple of the size) to
  // completion: ok, or the first failure (the caller then ends the process, as for a block).
  BlockRunner::Failure run(cutune_emu_abi::Dim3 first);
  // The uninitialised shared reads of the cluster run last (notes; see above).
  uint64_t noted_uninitialised_reads() const { return noted_; }

 private:
  // Swaps block i's shared memory image into the host thread's storage.
  void make_live(size_t i);

  std::vector<std::unique_ptr<BlockRunner>> blocks_;
  std::vector<std::vector<std::byte>> images_;
  size_t live_ = 0;
  uint64_t generation_ = 0;  // cluster barriers released (BlockRunner::join_cluster)
  bool poison_shared_ = false;
  uint64_t noted_ = 0;
};

}  // namespace cutune::emu
