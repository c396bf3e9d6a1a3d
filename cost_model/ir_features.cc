#include "cost_model/ir_features.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include <fmt/format.h>

#include "cost_model/feature_loop_nest.h"
#include "cost_model/feature_occupancy.h"
#include "cost_model/features.h"
#include "kernels/template.h"
#include "src/base/hash.h"
#include "src/ir/ir_mutator.h"
#include "src/ir/ir_operators.h"
#include "src/ir/ir_visitor.h"

namespace cutune::cost_model {

namespace {

// Enough samples to meet every loop a template's knobs can switch on, few enough that building
// an extractor stays in the milliseconds.
constexpr int kDiscoverySamples = 24;
constexpr uint64_t kDiscoverySeed = 0x5eed;

float log_scaled(double x) { return float(std::log2(1.0 + std::max(x, 0.0))); }

class NameCollector : public ir::IRVisitor {
 public:
  std::set<std::string> loops, buffers;

  void visit_node(const ir::For* op) override {
    loops.insert(op->var);
    IRVisitor::visit_node(op);
  }
  void visit_node(const ir::Allocate* op) override {
    buffers.insert(op->buffer->name);
    IRVisitor::visit_node(op);
  }
};

class IrFeatures final : public FeatureExtractor {
 public:
  IrFeatures(const Template& tmpl, const ir::TargetLimits& limits)
      : tmpl_(tmpl), sm_(sm_resources(limits.arch)), slots_(slot_names(tmpl)) {
    for (const std::string& loop : slots_.loops) {
      for (std::string_view f : kLoopFeatures) names_.push_back(fmt::format("loop.{}.{}", loop, f));
    }
    for (const std::string& buffer : slots_.buffers) {
      for (std::string_view f : kBufferFeatures) {
        names_.push_back(fmt::format("buffer.{}.{}", buffer, f));
      }
    }
    for (std::string_view f : kKernelFeatures) names_.push_back(fmt::format("kernel.{}", f));
    uint64_t h = fnv1a("");
    for (const std::string& name : names_) h = fnv1a(name + ',', h);
    schema_ = fmt::format("ir/v1:{}:{:016x}", tmpl.name(), h);
  }

  std::string schema() const override { return schema_; }
  int size() const override { return int(names_.size()); }
  std::vector<std::string> names() const override { return names_; }

  void extract(const Config& config, std::span<float> out) const override {
    ir::Kernel kernel;
    try {
      kernel = tmpl_.build(config);
    } catch (const ir::IRError&) {
      std::fill(out.begin(), out.begin() + size(), std::numeric_limits<float>::quiet_NaN());
      return;
    }
    // A kernel of run-time M is summarised at the M it is measured at (its task's): guards,
    // trip counts and addresses as the exact-shape kernel's would read.
    if (const std::optional<int64_t> m = tmpl_.runtime_m()) {
      for (const ir::Expr& v : kernel.scalars) {
        if (const ir::Var* var = v.as<ir::Var>(); var != nullptr && var->name == "M")
          kernel.body = ir::substitute(kernel.body, var->name, ir::i32(*m));
      }
    }
    thread_local LoopNestSummary summary;
    summarize_loop_nest(kernel, slots_.loops, slots_.buffers, summary);
    float* at = out.data();
    for (const LoopSlotStats& l : summary.loops) at = write_loop(l, at);
    for (const BufferSlotStats& b : summary.buffers) at = write_buffer(b, summary.kernel, at);
    write_kernel(summary, at);
  }

 private:
  static float* write_loop(const LoopSlotStats& l, float* at) {
    *at++ = log_scaled(l.extent);
    *at++ = log_scaled(l.trips);
    *at++ = log_scaled(l.depth);
    *at++ = log_scaled(l.outer);
    *at++ = log_scaled(l.inner);
    uint16_t kinds = l.seen ? l.kinds : uint16_t(1u << unsigned(ir::ForKind::serial));
    for (int k = 0; k <= int(ir::ForKind::thread_z); ++k) *at++ = float(kinds >> k & 1);
    *at++ = log_scaled(l.float_ops);
    *at++ = log_scaled(l.int_ops);
    return at;
  }

  static float* write_buffer(const BufferSlotStats& b, const KernelStats& k, float* at) {
    bool present = b.allocated_bytes > 0;
    *at++ = float(present && b.scope == ir::MemoryScope::global);
    *at++ = float(present && b.scope == ir::MemoryScope::shared);
    *at++ = float(present && b.scope == ir::MemoryScope::local);
    *at++ = log_scaled(b.allocated_bytes);
    *at++ = log_scaled(b.touched_thread);
    *at++ = log_scaled(b.touched_block);
    *at++ = log_scaled(b.touched_total);
    *at++ = log_scaled(b.distinct_thread);
    *at++ = log_scaled(b.distinct_block);
    *at++ = log_scaled(b.distinct_total);
    *at++ = log_scaled(b.distinct_total > 0 ? b.touched_total / b.distinct_total : 0);
    *at++ = log_scaled(b.stride_inner);
    *at++ = log_scaled(b.stride_thread_x);
    *at++ = log_scaled(b.lanes);
    *at++ = log_scaled(b.warp_transactions);
    *at++ = b.warp_transactions > 0 ? float(b.warp_ideal / b.warp_transactions) : 1.0f;
    *at++ = log_scaled(b.warp_bytes);
    *at++ = log_scaled(b.loads);
    *at++ = log_scaled(b.stores);
    *at++ = log_scaled(k.float_ops > 0 ? b.touched_total / k.float_ops : 0);
    return at;
  }

  void write_kernel(const LoopNestSummary& s, float* at) const {
    const KernelStats& k = s.kernel;
    double global_bytes = 0, global_distinct = 0, shared_touched = 0;
    for (const BufferSlotStats& b : s.buffers) {
      if (b.scope == ir::MemoryScope::global) {
        global_bytes += b.touched_total;
        global_distinct += b.distinct_total;
      } else if (b.scope == ir::MemoryScope::shared) {
        shared_touched += b.touched_total;
      }
    }
    int registers = estimate_registers(int64_t(k.local_bytes), sm_);
    if (k.min_blocks > 0 && k.threads_per_block > 0) {
      // ptxas keeps min_blocks blocks resident: at most the SM's registers over
      // (min_blocks · threads), in steps of 8.
      const int cap = int(sm_.registers / (k.min_blocks * k.threads_per_block)) / 8 * 8;
      if (cap >= 8) registers = std::min(registers, cap);
    }
    Occupancy occ =
        estimate_occupancy(sm_, int64_t(k.threads_per_block), int64_t(k.shared_bytes), registers);
    double slots = double(occ.blocks_per_sm) * sm_.sm_count;
    double blocks = k.blocks, tiles_per_block = 1;
    if (k.persistent_blocks_per_sm > 0) {
      // The launch takes min(tiles, SMs x its blocks per SM); its rounds are of tiles.
      slots = std::min(k.blocks, double(sm_.sm_count) * k.persistent_blocks_per_sm);
      blocks = slots;
      tiles_per_block = slots > 0 ? k.blocks / slots : 0;
    }
    double waves = slots > 0 ? std::ceil(k.blocks / slots) : 0;
    *at++ = log_scaled(k.threads_per_block);
    *at++ = log_scaled(blocks);
    *at++ = log_scaled(k.shared_bytes);
    *at++ = log_scaled(k.local_bytes);
    *at++ = log_scaled(registers);
    *at++ = log_scaled(occ.blocks_per_sm);
    *at++ = float(occ.warps_fraction);
    *at++ = log_scaled(waves);
    *at++ = waves > 0 ? float(k.blocks / (waves * slots)) : 0.0f;
    *at++ = log_scaled(k.float_ops);
    *at++ = log_scaled(k.int_ops);
    *at++ = log_scaled(global_bytes);
    *at++ = log_scaled(global_distinct);
    *at++ = log_scaled(shared_touched);
    *at++ = log_scaled(global_bytes > 0 ? k.float_ops / global_bytes : 0);
    *at++ = log_scaled(global_distinct > 0 ? k.float_ops / global_distinct : 0);
    *at++ = log_scaled(k.syncs_per_thread);
    *at++ = log_scaled(k.float_ops > 0 ? k.int_ops / k.float_ops : 0);
    *at++ = log_scaled(k.mma_ops);
    *at++ = log_scaled(k.async_copy_bytes);
    *at++ = log_scaled(k.pipeline_depth);
    double group_bytes = k.async_commits_per_thread > 0 && k.blocks > 0
                             ? k.async_copy_bytes / k.blocks / k.async_commits_per_thread
                             : 0;
    *at++ = log_scaled(group_bytes * (k.pipeline_depth - 1));
    *at++ = log_scaled(k.min_blocks);
    *at++ = log_scaled(k.tma_copy_bytes);
    const double copied = k.tma_copy_bytes + k.async_copy_bytes;
    *at++ = copied > 0 ? float(k.tma_copy_bytes / copied) : 0.0f;
    *at++ = log_scaled(k.tma_stages);
    *at++ = log_scaled(k.tma_stage_bytes * std::max(0.0, k.tma_stages - 1));
    *at++ = float(k.warp_specialized);
    *at++ = log_scaled(k.mma_in_flight);
    *at++ = log_scaled(tiles_per_block);
    *at++ = float(k.cluster_x);
  }

  const Template& tmpl_;
  SmResources sm_;
  SlotNames slots_;
  std::vector<std::string> names_;
  std::string schema_;
};

}  // namespace

SlotNames slot_names(const Template& tmpl) {
  SlotNames out{tmpl.loop_names(), tmpl.buffer_names()};
  if (!out.loops.empty() && !out.buffers.empty()) return out;

  std::vector<Config> configs = tmpl.reference_configs();
  std::mt19937_64 rng(kDiscoverySeed);
  for (int i = 0; i < kDiscoverySamples; ++i) {
    std::optional<Config> c = tmpl.space().sample_valid(rng, 10000);
    if (c) configs.push_back(*c);
  }
  NameCollector names;
  for (const Config& c : configs) {
    try {
      ir::Kernel kernel = tmpl.build(c);
      for (const ir::Buffer& b : kernel.buffers) names.buffers.insert(b->name);
      names.visit(kernel.body);
    } catch (const ir::IRError&) {
    }
  }
  if (out.loops.empty()) out.loops.assign(names.loops.begin(), names.loops.end());
  if (out.buffers.empty()) out.buffers.assign(names.buffers.begin(), names.buffers.end());
  return out;
}

std::unique_ptr<FeatureExtractor> make_ir_features(const Template& tmpl,
                                                   const ir::TargetLimits& limits) {
  return std::make_unique<IrFeatures>(tmpl, limits);
}

}  // namespace cutune::cost_model
