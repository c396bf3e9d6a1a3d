#pragma once
// Knob features for the model-based tuner on spaces without IR (replayed caches): per knob
// value v (each split factor counts as one), two columns,
//
//   log2(1 + v)                   the magnitude, as cost_model's knobs/v1 features have it;
//   log2(v / 2^ctz(v)), v > 0     the odd part: 0 exactly for powers of two.
//
// Why the second: GPU kernels are fast at power-of-two sizes (warps of 32, memory segments,
// shared-memory banks, vector widths) and often an order of magnitude slower just beside
// them. A tree ensemble sees the magnitude only through thresholds, so "v is a power of two"
// over {16, 32, 48, ..., 256} costs it one split per value; the odd part makes it one split.
// Where every value is a power of two (the GEMM caches) the column is constant and the
// trees never split on it. Negative or zero values (sentinels) give v itself and 0.
//
// Schema "knobs/v2:<knob names>"; the length is fixed by the space's knobs.

#include <memory>

#include "cost_model/features.h"

namespace cutune {

std::unique_ptr<cost_model::FeatureExtractor> make_tuning_knob_features(const ConfigSpace& space);

}  // namespace cutune
