#pragma once
// The emulator's internal assertion: a broken invariant of cutune's own code (never bad user
// input, never a failing kernel) prints where and why, then aborts.

#include <cstdio>
#include <cstdlib>

#define CUTUNE_EMU_ASSERT(cond, msg)                                                            \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "%s:%d: internal error: %s (%s)\n", __FILE__, __LINE__, msg, #cond); \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)
