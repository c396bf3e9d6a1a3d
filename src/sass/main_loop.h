#pragma once
// Loops in a kernel's machine code, and the one that is its main loop.
//
// A loop is a backward branch: the branch at address b jumping to t <= b makes the
// instructions [t, b] a loop body (its latch is the branch). nvdisasm lists code in address
// order and compilers lay out loop bodies contiguously, so address ranges stand for loops.
// Except where the range holds an unguarded EXIT: that branch ends a block placed after the
// kernel's exit that jumps back into it (ptxas puts an mbarrier wait's retry there), not a loop.
//
// The main loop is the innermost loop with the most instructions: among the loops whose
// range contains no other loop's range, the one spanning the most instructions (ties: the
// earlier). Innermost, because a kernel's hot loop (a GEMM's k-tile loop, with its inner
// loops fully unrolled) is where the time goes, while an outer loop's count is inflated by
// its prologue and epilogue code; the largest, because small innermost loops (a remainder
// loop, a zero-fill, a spin-wait on a barrier) run rarely. A kernel whose hot loop keeps a
// rolled inner loop has that inner loop reported; the listing says so by its size.
// Where some loop holds a math instruction (FFMA, HMMA, HGMMA...: InstructionClass::math), the
// loops without one are set aside first: a TMA kernel's k-tile loop contains ptxas's elect-one
// loop around its UTMALDG (ELECT and a branch back), which is innermost but not where the
// time goes.

#include <cstddef>
#include <optional>
#include <vector>

#include "src/sass/sass_listing.h"

namespace cutune::sass {

// Indices into Function::instructions, inclusive: first is the branch target, last the latch.
struct Loop {
  size_t first = 0;
  size_t last = 0;
  size_t size() const { return last - first + 1; }
  bool contains(const Loop& o) const { return first <= o.first && o.last <= last; }
  friend bool operator==(const Loop&, const Loop&) = default;
};

// Every backward branch's loop (but those spanning an unguarded EXIT), in latch order. Two
// latches jumping to the same target (a `continue`) give two loops; the inner one is the
// shorter.
std::vector<Loop> find_loops(const Function& function);

// The main loop by the rule above; nullopt for straight-line code.
std::optional<Loop> main_loop(const Function& function);

}  // namespace cutune::sass
