#include "cost_model/analytical_prior.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cutune::cost_model {

namespace {

// ir_features.h scales counts as log2(1 + x).
double unscaled(float v) { return std::isfinite(v) ? std::exp2(double(v)) - 1.0 : 0.0; }

// Dense fp32 FMA and 16-bit tensor flops per SM and clock of an architecture (the data sheets'
// peak rates over SMs and boost clock), for warpgroup MMA where the architecture has it.
struct ArchRates {
  const char* arch;
  double fma, tensor;
};
constexpr ArchRates kRates[] = {
    {"sm_70", 128, 1024}, {"sm_75", 128, 1024}, {"sm_80", 128, 2048}, {"sm_86", 256, 512},
    {"sm_89", 256, 512},  {"sm_90", 256, 4096}, {"sm_100", 256, 8192}, {"sm_120", 256, 512},
};

}  // namespace

PriorTarget prior_target(const DeviceInfo& device, const std::string& family) {
  PriorTarget t;
  if (device.sm_count > 0) t.sm_count = device.sm_count;
  if (device.clock_khz > 0) t.clock_hz = device.clock_khz * 1e3;
  if (device.l2_bytes > 0) t.l2_capacity = device.l2_bytes;
  if (device.mem_clock_khz > 0 && device.mem_bus_width > 0) {
    // Double data rate: two transfers a memory clock.
    t.dram_bytes_per_second = device.mem_clock_khz * 1e3 * 2 * device.mem_bus_width / 8.0;
  }
  const std::string arch = device.arch();
  for (const ArchRates& r : kRates) {
    if (arch != r.arch) continue;
    t.fma_flops = r.fma;
    t.tensor_flops = r.tensor;
  }
  // mma.sync does not reach warpgroup MMA's rate on Hopper (about 5/8 of it measured).
  if (family != "wgmma" && device.cc_major == 9) t.tensor_flops *= 0.625;
  return t;
}

AnalyticalPrior::AnalyticalPrior(const std::vector<std::string>& names, PriorTarget target)
    : target_(target) {
  auto at = [&names](const std::string& name) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw std::invalid_argument(fmt::format("analytical prior: no feature '{}'", name));
    return static_cast<int>(it - names.begin());
  };
  blocks_ = at("kernel.blocks");
  blocks_per_sm_ = at("kernel.blocks_per_sm");
  waves_ = at("kernel.waves");
  wave_efficiency_ = at("kernel.wave_efficiency");
  occupancy_ = at("kernel.occupancy");
  registers_ = at("kernel.registers");
  local_bytes_ = at("kernel.local_bytes");
  tiles_per_block_ = at("kernel.tiles_per_block");
  float_ops_ = at("kernel.float_ops");
  int_ops_ = at("kernel.int_ops");
  mma_ops_ = at("kernel.mma_ops");
  global_distinct_ = at("kernel.global_distinct_bytes");
  shared_touched_ = at("kernel.shared_bytes_touched");
  syncs_ = at("kernel.syncs_per_thread");
  async_bytes_ = at("kernel.async_copy_bytes");
  bytes_in_flight_ = at("kernel.bytes_in_flight");
  tma_bytes_ = at("kernel.tma_copy_bytes");
  tma_in_flight_ = at("kernel.tma_bytes_in_flight");
  const std::string suffix = ".global";
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (!n.starts_with("buffer.") || !n.ends_with(suffix)) continue;
    const std::string slot = n.substr(0, n.size() - suffix.size());
    globals_.push_back(
        {static_cast<int>(i), at(slot + ".touched_total"), at(slot + ".warp_efficiency")});
  }
}

PriorEstimate AnalyticalPrior::estimate(std::span<const float> row) const {
  const PriorTarget& t = target_;
  PriorEstimate e;
  const double sms = t.sm_count;
  const double blocks_per_sm = unscaled(row[blocks_per_sm_]);
  if (!std::isfinite(row[blocks_]) || blocks_per_sm < 0.5) {
    // Not built, or no block fits on an SM: last, by far.
    e.fits = false;
    e.seconds = 1e3;
    return e;
  }
  const double mma_flops = unscaled(row[mma_ops_]) * 4096.0;  // m16n8k16 equivalents
  const double fma_flops = std::max(0.0, unscaled(row[float_ops_]) - mma_flops);
  e.tensor = mma_flops / (sms * t.tensor_flops);
  e.fma = fma_flops / (sms * t.fma_flops);
  e.issue = (fma_flops / 2 + t.int_issue_share * unscaled(row[int_ops_])) / (sms * 128.0);

  double l2_bytes = unscaled(row[tma_bytes_]);
  for (const GlobalBuffer& b : globals_) {
    if (row[b.flag] < 0.5) continue;  // not a global buffer in this configuration
    const double efficiency = std::clamp(double(row[b.warp_efficiency]), 0.125, 1.0);
    l2_bytes += unscaled(row[b.touched]) / efficiency;
  }
  e.l2 = l2_bytes / (sms * t.l2_bytes_per_clock);
  // DRAM: each distinct byte once, and once the footprint outgrows half the L2 a share of the
  // re-reads that rises toward a quarter of them.
  const double distinct = unscaled(row[global_distinct_]);
  const double half_l2 = t.l2_capacity / 2;
  double dram_bytes = distinct;
  if (distinct > half_l2)
    dram_bytes += std::max(0.0, l2_bytes - distinct) * 0.25 * (1 - half_l2 / distinct);
  e.dram = dram_bytes / t.dram_bytes_per_second * t.clock_hz;
  e.shared = unscaled(row[shared_touched_]) / (sms * t.shared_bytes_per_clock);

  // Latency hiding: the ring's bytes in flight per SM against bandwidth x latency; without a
  // ring, the resident warps (a quarter of the SM's hides a load's latency in a tiled loop).
  const bool ring = unscaled(row[async_bytes_]) + unscaled(row[tma_bytes_]) > 0;
  if (ring) {
    const double in_flight =
        (unscaled(row[bytes_in_flight_]) + unscaled(row[tma_in_flight_])) * blocks_per_sm;
    e.hiding = std::clamp(in_flight / (t.l2_bytes_per_clock * t.latency_clocks), 0.05, 1.0);
  } else {
    e.hiding = std::clamp(double(row[occupancy_]) * 4, 0.1, 1.0);
  }
  const double terms[] = {e.tensor, e.fma, e.issue, e.l2 / e.hiding, e.dram / e.hiding, e.shared};
  double largest = 0, sum = 0;
  for (double v : terms) {
    largest = std::max(largest, v);
    sum += v;
  }
  e.body = largest + 0.1 * (sum - largest);

  const double wave_efficiency = std::clamp(double(row[wave_efficiency_]), 1e-3, 1.0);
  e.waves = std::max(1.0, unscaled(row[waves_]));
  // A persistent kernel's waves are rounds of tiles its blocks walk (tiles_per_block > 1):
  // launched and filled once, then each further tile exposes less.
  const bool persistent = unscaled(row[tiles_per_block_]) > 1.0 + 1e-6;
  e.fixed = persistent ? t.block_fixed_clocks + (e.waves - 1) * t.tile_switch_clocks
                       : e.waves * t.block_fixed_clocks;
  e.barriers = unscaled(row[syncs_]) * t.barrier_clocks * e.waves / blocks_per_sm;
  double clocks = e.body / wave_efficiency + e.fixed + e.barriers;
  // Spills: the register estimate at the cap with more per-thread arrays than it holds.
  const double registers = unscaled(row[registers_]);
  e.spills = registers >= 255 && unscaled(row[local_bytes_]) / 4 > 255;
  if (e.spills) clocks *= 2;
  e.seconds = clocks / t.clock_hz;
  return e;
}

std::vector<float> AnalyticalPrior::score(const FeatureMatrix& x) const {
  std::vector<float> out(x.rows);
  for (int r = 0; r < x.rows; ++r) out[r] = float(-std::log2(estimate(x.row(r)).seconds));
  return out;
}

std::unique_ptr<AnalyticalPrior> make_analytical_prior(const FeatureExtractor& features,
                                                       const PriorTarget& target) {
  if (!features.schema().starts_with("ir/")) return nullptr;
  return std::make_unique<AnalyticalPrior>(features.names(), target);
}

}  // namespace cutune::cost_model
