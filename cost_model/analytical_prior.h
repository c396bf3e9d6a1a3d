#pragma once
// An analytical prior: what a configuration's IR features (ir_features.h) say its time will be
// before anything is measured, so that a search from zero records starts from sensible
// configurations instead of random ones (issue 50 item 5).
//
// The estimate is a roofline with the costs a tile schedule controls, over the whole GPU:
//
//   body  = the largest of: tensor-core time (mma flops at the family's rate), FMA time,
//           instruction issue (FMA and a share of the integer operations at 128 lanes a clock
//           per SM), L2->SM
//           traffic (global bytes touched, over coalescing, plus TMA boxes), DRAM traffic
//           (distinct bytes, plus re-reads once the footprint outgrows half the L2), shared
//           memory traffic; plus a tenth of the others (overlap is never perfect)
//   memory terms divided by how well latency is hidden: bytes in flight per SM (the cp.async
//           or TMA ring's stages times the resident blocks) against the SM's share of L2
//           bandwidth times the load latency; without a ring, the resident warps
//   time  = body / wave efficiency  +  waves x a block's fixed cost (launch, barrier set-up,
//           the ring's first fill; a persistent block pays it once, and a smaller one for each
//           further round of tiles)  +  block barriers
//
// with a configuration that does not fit on an SM (no resident block) or that spills (the
// register estimate at the cap with more per-thread arrays than registers) penalised. The
// prior ranks; it does not predict times to the percent. Its score is -log2(seconds), so one
// unit is a factor of two, and the model-based search adds it as a fading base margin
// (src/tune/prior_margin.h) that measurements correct.
//
// Only IR features carry what it reads: make_analytical_prior returns null for other schemas
// (knob features of a replayed cache).

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cost_model/features.h"
#include "cost_model/rank_model.h"
#include "src/target/device_info.h"

namespace cutune::cost_model {

// The rates the estimate uses, per SM and clock unless said otherwise.
struct PriorTarget {
  int sm_count = 132;
  double clock_hz = 1.98e9;
  double fma_flops = 256;      // fp32 FMA units: 2 flops each
  double tensor_flops = 4096;  // dense 16-bit MMA with fp32 accumulation, for the family
  double l2_bytes_per_clock = 40;
  double shared_bytes_per_clock = 128;
  double dram_bytes_per_second = 3.35e12;
  double l2_capacity = 50.0 * 1024 * 1024;
  double latency_clocks = 800;        // a global load through L2 to DRAM and back
  double block_fixed_clocks = 2500;   // launch, barrier set-up, the first fill of the ring
  double tile_switch_clocks = 500;    // a persistent block's next tile: what its epilogue exposes
  double barrier_clocks = 40;         // one block-wide barrier
  // The share of the IR's integer operations that reach the issue slots: the IR counts each
  // index computation where it is written, while the compiler hoists the loop-invariant parts
  // and folds constant offsets into the addressing (an assumption until measured).
  double int_issue_share = 0.25;
};

// The target of a device and a template's instruction family ("simt", "mma", "wgmma"): the
// device's SM count, clock, memory bus and L2; the architecture's FMA and tensor rates
// (mma.sync on Hopper at about 5/8 of warpgroup MMA's rate).
PriorTarget prior_target(const DeviceInfo& device, const std::string& family);

// The terms of one estimate, in seconds (for tests and `cutune explain`-like reports).
struct PriorEstimate {
  double tensor = 0, fma = 0, issue = 0, l2 = 0, dram = 0, shared = 0;
  double hiding = 1;  // latency hiding of the memory terms, in (0, 1]
  double body = 0, waves = 0, fixed = 0, barriers = 0;
  double seconds = 0;
  bool fits = true, spills = false;
};

class AnalyticalPrior {
 public:
  // `names` are the features' names (FeatureExtractor::names); throws std::invalid_argument
  // when one the estimate reads is missing.
  AnalyticalPrior(const std::vector<std::string>& names, PriorTarget target);

  PriorEstimate estimate(std::span<const float> row) const;
  // -log2(estimate(row).seconds) for each row.
  std::vector<float> score(const FeatureMatrix& x) const;
  const PriorTarget& target() const { return target_; }

 private:
  struct GlobalBuffer {
    int flag, touched, warp_efficiency;  // columns: the scope flag, bytes, coalescing
  };
  PriorTarget target_;
  // Columns of the kernel features it reads.
  int blocks_, blocks_per_sm_, waves_, wave_efficiency_, occupancy_, registers_, local_bytes_;
  int tiles_per_block_;
  int float_ops_, int_ops_, mma_ops_, global_distinct_, shared_touched_, syncs_;
  int async_bytes_, bytes_in_flight_, tma_bytes_, tma_in_flight_;
  std::vector<GlobalBuffer> globals_;
};

// The prior for an IR feature extractor, or null when its features are not IR features.
std::unique_ptr<AnalyticalPrior> make_analytical_prior(const FeatureExtractor& features,
                                                       const PriorTarget& target);

}  // namespace cutune::cost_model
