#pragma once
// The state of a block's mbarriers, kept by the host for the emulator (the barrier's 8 bytes
// in shared memory are only its key), exactly as the PTX ISA defines it: a current phase, the
// expected and pending arrival counts, and the transaction count (tx-count, bytes).
//
//  - init(count): phase 0, expected = pending = count, tx 0.
//  - arrive(count, tx): first expect-tx (tx-count += tx), then `count` arrivals (pending -=
//    count); count 0 is a plain expect_tx.
//  - complete_tx(bytes): tx-count -= bytes, for a TMA copy's bytes that have landed.
//  - The current phase completes when pending == 0 and tx-count == 0: the phase number goes up
//    by one and pending = expected again (tx-count is 0).
//  - phase_done(parity): whether the phase of that parity has completed, i.e. the current
//    phase's parity differs from it (try_wait.parity / test_wait.parity).
// Misuse is reported, not ignored: a barrier used before init or after inval, a count outside
// 1..2^20-1, more arrivals than pending, a tx-count outside +-(2^20-1), and a phase that
// completes while TMA copies issued against it in that phase are still in flight (its
// expect_tx counted fewer bytes than the copies bring).

#include <cstdint>
#include <string>
#include <unordered_map>

namespace cutune::emu {

class AsyncBarriers {
 public:
  struct Barrier {
    uint32_t expected = 0;
    uint32_t pending = 0;
    int64_t tx = 0;
    uint64_t phase = 0;
    int64_t in_flight = 0;  // bytes of copies issued this phase and not yet landed
  };

  // Each returns "" or the misuse, in words (the caller adds the thread and line).
  std::string init(const void* bar, int count);
  std::string arrive(const void* bar, int count, int tx);
  std::string complete_tx(const void* bar, int64_t bytes);
  // A copy of `bytes` is issued against `bar` (it must be initialised).
  std::string note_issue(const void* bar, int64_t bytes);
  std::string inval(const void* bar);

  // nullptr when `bar` is not an initialised barrier.
  const Barrier* find(const void* bar) const;
  // Whether the phase of `parity` has completed; `bar` must be initialised.
  bool phase_done(const void* bar, int parity) const;
  // "phase 3, 1 of 2 arrivals pending, tx-count 4096 bytes" (or "not initialised").
  std::string describe(const void* bar) const;
  // How many phases have completed, over all barriers (the scheduler's progress measure).
  uint64_t completions() const { return completions_; }

  void clear();

 private:
  std::string maybe_complete(Barrier& b);

  std::unordered_map<const void*, Barrier> barriers_;
  uint64_t completions_ = 0;
};

}  // namespace cutune::emu
