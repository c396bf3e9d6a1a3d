#pragma once
// Which GPUs of a host one task measures on: `--devices all` (or empty) takes every GPU of the
// task's kind, `--devices 0,2` names ordinals. A task never mixes GPU kinds: times of two
// different GPUs in one search would not be comparable.
//
// The kind is the device name the driver reports (two GPUs of one architecture with different
// clocks or memory are different kinds). The task's kind is that of the first named ordinal,
// or, for "all", that of the first GPU whose architecture is `arch` (any GPU when arch is
// empty).

#include <string>
#include <vector>

#include "src/runtime/device.h"

namespace cutune {

// The chosen ordinals, ascending for "all", in the given order otherwise. UserError (one line)
// for a malformed list, an ordinal that is not present, a repeated ordinal, GPUs of different
// kinds, or no GPU of the wanted architecture. An empty `present` gives an empty result (the
// caller reports "no CUDA device found").
std::vector<int> select_devices(const std::string& spec, const std::vector<DeviceInfo>& present,
                                const std::string& arch = "");

}  // namespace cutune
