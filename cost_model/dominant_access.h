#pragma once
// The access of a buffer that moves the most bytes, kept by the loop-nest walk
// (feature_loop_nest.h) to evaluate its strides and a warp's behaviour once the walk is over.

#include <cstdint>

#include "cost_model/feature_loop_nest.h"
#include "cost_model/index_program.h"

namespace cutune::cost_model {

struct DominantAccess {
  double bytes = -1;  // per launch; -1 before the first access
  IndexProgram index;
  int lanes = 1;
  int element_bytes = 4;
  int frames = 0;     // loops in scope
  int inner = -1;     // the innermost unbound one, or -1
  int thread_x = -1;  // the threadIdx.x one, or -1
  int64_t thread_x_extent = 1;
};

// Sets the lanes, strides and warp figures of `s` (a buffer of its scope) from its dominant
// access.
void strides_and_warp(const DominantAccess& dom, BufferSlotStats& s);

}  // namespace cutune::cost_model
