// The sanitizer's tracked rule for uninitialised shared reads (sanitizer.h): a block that read
// shared memory no thread of it wrote runs again, twice, with those bytes holding other values.
// What such a value reaches that matters shows as a difference between the runs: an output
// (the bytes the block's global stores leave), a branch or an address (the sequence of the
// block's shared and global accesses, or a failure that only the other values cause). No
// difference: the reads are a note (edge tiles that compute, from padding, results they never
// store). The kernel is native code, so this is what can be tracked without a shadow for every
// register: a dependence that none of the fills shows (a value clamped to the same result by all
// three, a branch whose arms touch the same memory and leave the same outputs) goes unseen.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "src/emulator/block_runner.h"

namespace cutune::emu {

namespace {

// After the poison (0xff: NaN, -1): zero, and 0x5a (a large positive float, int and half),
// which between them move every bit and land on either side of most thresholds.
constexpr std::array<unsigned char, 2> kRerunFills = {0x00, 0x5a};

}  // namespace

BlockRunner::Failure BlockRunner::track_uninitialised(cutune_emu_abi::Dim3 block_idx) {
  BlockSanitizer& s = *sanitizer_;
  const uint64_t reads = s.uninitialised_reads();
  if (s.used_global_atomics()) {
    s.report_tracked(
        "the block uses global atomics, so it cannot run again to tell whether the value "
        "reaches an output: the strict rule applies");
  }
  const BlockSanitizer::Outcome first = s.outcome();
  const std::string before = poison_shared_ ? "0xff" : "what the block before left";
  for (unsigned char fill : kRerunFills) {
    const std::string fills =
        fmt::format("the shared bytes no thread wrote hold {:#04x} instead of {}", fill, before);
    const std::string context =
        fmt::format("when {} (block {} run again to track its uninitialised shared reads)", fills,
                    dim(block_idx));
    s.undo_global_stores();
    s.set_rerun_context(context);
    Failure f = run_once(block_idx, fill);
    s.set_rerun_context("");
    if (f.status != EmuStatus::ok) {
      f.message = context + ": " + f.message;
      return f;
    }
    const BlockSanitizer::Outcome again = s.outcome();
    if (again.trace != first.trace || again.stores != first.stores ||
        again.stored.size() != first.stored.size()) {
      s.report_tracked(fmt::format(
          "its value decides a branch or an address: the block's shared and global accesses "
          "change when {}",
          fills));
    }
    auto differ = std::mismatch(first.stored.begin(), first.stored.end(), again.stored.begin());
    if (differ.first != first.stored.end()) {
      s.report_tracked(fmt::format("its value reaches an output: {} changes when {}",
                                   s.stored_element(differ.first - first.stored.begin()), fills));
    }
  }
  noted_ = reads;
  return {};
}

}  // namespace cutune::emu
