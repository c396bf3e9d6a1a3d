#include "cost_model/feature_loop_nest.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <utility>

#include "cost_model/dominant_access.h"
#include "cost_model/index_program.h"
#include "cost_model/loop_scope.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_visitor.h"
#include "src/ir/tma_intrinsics.h"

namespace cutune::cost_model {

namespace {

using namespace ir;

struct OpCount {
  double float_ops = 0, int_ops = 0;
  double mma = 0, async_bytes = 0, commits = 0;  // tensor-core intrinsics, per thread
  int wait_pending = -1;                         // the largest cp.async wait_group N
  double tma_bytes = 0;                          // TMA box bytes issued, per thread
};

// One mma.m16n8k16 is 16·8·16 multiply-adds for the warp: 2·2048 / 32 flops per lane.
constexpr double kMmaFlopsPerLane = 2.0 * 16 * 8 * 16 / 32;

constexpr int kWarp = 32;

// One pass over the kernel. Statements are walked with the weight of their operations (the
// fraction of the enclosing iterations that run them, and the mean trips of loops whose extent
// varies): each returns, in inner_, the product of the extents along its deepest nest.
// Expressions are counted into the operations of the statement that holds them (ops_), their
// loads being accesses.
//
// Reused across calls on one thread (see summarize_loop_nest), so that its vectors keep their
// capacity: allocation would otherwise cost as much as the analysis.
class LoopNestAnalyzer : public IRVisitor {
 public:
  void reset(std::span<const std::string> loop_names, std::span<const std::string> buffer_names,
             LoopNestSummary& out) {
    loop_names_ = loop_names;
    buffer_names_ = buffer_names;
    out_ = &out;
    out.loops.assign(loop_names.size(), LoopSlotStats{});
    out.buffers.assign(buffer_names.size(), BufferSlotStats{});
    out.kernel = KernelStats{};
    dominant_.resize(buffer_names.size());
    for (DominantAccess& d : dominant_) d.bytes = -1;
    scope_.frames.clear();
    scope_.lets.clear();
    frame_slots_.clear();
    buffer_cache_.clear();
    std::fill(std::begin(block_), std::end(block_), 1);
    std::fill(std::begin(grid_), std::end(grid_), 1);
    map_box_bytes_.clear();
  }

  void run(const Kernel& kernel) {
    for (const ir::TensorMapParam& m : kernel.tensor_maps) {
      map_box_bytes_.emplace_back(m.name, double(m.desc.box_bytes()));
    }
    for (const Buffer& b : kernel.buffers) {
      int slot = buffer_slot(b.get());
      if (slot < 0) continue;
      BufferSlotStats& s = out_->buffers[slot];
      s.scope = MemoryScope::global;
      s.allocated_bytes = double(b->elements) * b->type.element_bytes();
    }
    walk(kernel.body, 1.0);
    finish();
  }

 private:
  using IRVisitor::visit_node;

  double walk(const Stmt& s, double weight) {
    const double saved = weight_;
    weight_ = weight;
    inner_ = 1;
    visit(s);
    weight_ = saved;
    return inner_;
  }

  void visit_node(const For* op) override {
    Interval r = scope_.range(op->extent);
    int64_t extent = r.is_bounded() ? std::max<int64_t>(*r.hi, 1) : 1;
    int64_t min = as_const_int(op->min).value_or(0);
    // The loop variable ranges up to the bound; the work is counted at the mean trip count.
    const double trips = mean_trips(op->extent, extent);
    Extents x = scope_.extents();
    double outer = x.serial * x.threads * x.blocks;
    int slot = loop_slot(op->var);
    if (slot >= 0) {
      LoopSlotStats& l = out_->loops[slot];
      l.seen = true;
      l.extent = std::max(l.extent, double(extent));
      l.trips += outer * trips * weight_;
      l.depth = std::max(l.depth, double(scope_.frames.size()));
      l.outer = std::max(l.outer, outer);
      l.kinds |= uint16_t(1u << unsigned(op->kind));
    }
    note_launch(op->kind, extent);
    LoopFrame frame{&op->var, min, extent, op->kind, x.serial, x.threads, x.blocks};
    double e = double(extent);
    (is_thread_binding(op->kind)  ? frame.threads
     : is_block_binding(op->kind) ? frame.blocks
                                  : frame.serial) *= e;
    scope_.frames.push_back(frame);
    frame_slots_.push_back(slot);
    double inner = walk(op->body, weight_ * trips / double(extent));
    scope_.frames.pop_back();
    frame_slots_.pop_back();
    if (slot >= 0) out_->loops[slot].inner = std::max(out_->loops[slot].inner, inner);
    inner_ = inner * trips;
  }

  void visit_node(const Allocate* op) override {
    double bytes = double(op->buffer->elements) * op->buffer->type.element_bytes();
    if (op->buffer->scope == MemoryScope::shared) out_->kernel.shared_bytes += bytes;
    if (op->buffer->scope == MemoryScope::local) out_->kernel.local_bytes += bytes;
    int slot = buffer_slot(op->buffer.get());
    if (slot >= 0) {
      out_->buffers[slot].scope = op->buffer->scope;
      out_->buffers[slot].allocated_bytes = bytes;
    }
    inner_ = walk(op->body, weight_);
  }

  void visit_node(const Store* op) override {
    ops_ = {};
    visit(op->index);
    visit(op->value);
    access(op->buffer, op->index, op->lanes(), true);
    charge();
    inner_ = 1;
  }

  void visit_node(const Sync*) override {
    out_->kernel.syncs_per_thread += scope_.extents().serial * weight_;
    inner_ = 1;
  }

  void visit_node(const IfThenElse* op) override {
    ops_ = {};
    visit(op->condition);
    charge();
    double p = probability(op->condition, scope_);
    double inner = walk(op->then_case, weight_ * p);
    if (op->else_case.defined()) inner = std::max(inner, walk(op->else_case, weight_ * (1 - p)));
    inner_ = inner;
  }

  void visit_node(const Block* op) override {
    double inner = 1;
    for (const Stmt& child : op->stmts) inner = std::max(inner, walk(child, weight_));
    inner_ = inner;
  }

  void visit_node(const LetStmt* op) override {
    // A broadcast (warp_uniform) stands for its operand: the same value, known in every
    // lane, at the cost of the operand.
    const Expr& value = ir::warp_uniform_operand(op->value);
    ops_ = {};
    visit(value);
    charge();
    scope_.lets.push_back({&op->var, &value, deps_of(value, scope_), scope_.range(value)});
    double inner = walk(op->body, weight_);
    scope_.lets.pop_back();
    inner_ = inner;
  }

  void visit_node(const Evaluate* op) override {
    ops_ = {};
    visit(op->value);
    charge();
    inner_ = 1;
  }

  void visit_node(const Load* op) override {
    visit(op->index);
    access(op->buffer, op->index, op->lanes(), false);
  }

  void visit_node(const Not* op) override {
    ops_.int_ops += 1;
    IRVisitor::visit_node(op);
  }

  void visit_node(const Select* op) override {
    ops_.int_ops += 1;
    IRVisitor::visit_node(op);
  }

#define CUTUNE_COUNT_BINARY(name)                                            \
  void visit_node(const name* op) override {                                 \
    (op->type.is_float() ? ops_.float_ops : ops_.int_ops) += op->type.lanes; \
    IRVisitor::visit_node(op);                                               \
  }
  CUTUNE_IR_BINARY_NODES(CUTUNE_COUNT_BINARY)
#undef CUTUNE_COUNT_BINARY

  void visit_node(const Call* op) override {
    // A copy's or ldmatrix's address arguments are accesses of their width: cp.async moves
    // N bytes from global (the source) into shared memory (the destination) a thread;
    // ldmatrix.xC reads C 8x16-byte matrices from shared memory a warp, 4·C bytes a lane
    // on average. Any other address_of argument counts as a one-element access.
    if (op->name.starts_with("cutune_cp_async_") && op->args.size() == 3) {
      const int width_bytes = std::atoi(op->name.c_str() + 16);
      if (width_bytes > 0) {
        count_address(op->args[0], width_bytes, true);
        count_address(op->args[1], width_bytes, false);
        visit(op->args[2]);
        ops_.async_bytes += width_bytes;
        return;
      }
    } else if (op->name.starts_with("cutune_ldmatrix_x") && op->args.size() == 2) {
      const int width_bytes = 4 * std::atoi(op->name.c_str() + 17);
      if (width_bytes > 0) {
        visit(op->args[0]);
        count_address(op->args[1], width_bytes, false);
        ops_.int_ops += 1;  // as any other call
        return;
      }
    }
    if (op->name == ir::kAddressOf) {
    } else if (op->name.starts_with("cutune_mma_")) {
      ops_.mma += 1;
      ops_.float_ops += kMmaFlopsPerLane;
    } else if (op->name.starts_with("cutune_wgmma_m64n")) {
      // A warpgroup's m64nNk16 is N/8 m16n8k16s per warp: counted as that many mma.sync
      // calls, with its 2·64·N·16/128 flops per thread.
      const int n = std::stoi(op->name.substr(17));
      ops_.mma += n / 8.0;
      ops_.float_ops += 2.0 * 64 * n * 16 / 128;
    } else if ((op->name == "cutune_tma_load_2d" || op->name == "cutune_tma_load_2d_multicast") &&
               op->args.size() >= 3) {
      // A box of its tensor map lands in shared memory; the ring is the barriers the
      // copies complete on (the allocation the barrier argument points into).
      if (const Var* map = op->args[1].as<Var>()) {
        for (const auto& [name, bytes] : map_box_bytes_)
          if (name == map->name) ops_.tma_bytes += bytes;
      }
      if (const Buffer* bar = address_buffer(op->args[2])) {
        out_->kernel.tma_stages = std::max(out_->kernel.tma_stages, double((*bar)->elements));
      }
    } else if (op->name == "cutune_mbarrier_arrive_expect_tx" ||
               op->name == "cutune_mbarrier_expect_tx") {
      if (auto bytes = as_const_int(op->args.back())) {
        out_->kernel.tma_stage_bytes = std::max(out_->kernel.tma_stage_bytes, double(*bytes));
      }
    } else if (op->name.starts_with("cutune_setmaxnreg_")) {
      out_->kernel.warp_specialized = true;
    } else if (op->name.starts_with("cutune_wgmma_wait_group_")) {
      out_->kernel.mma_in_flight =
          std::max(out_->kernel.mma_in_flight, double(std::stoi(op->name.substr(24))));
      ops_.int_ops += 1;  // as any other call
    } else if (op->name.starts_with("cutune_cp_async_wait_")) {
      ops_.wait_pending = std::max(ops_.wait_pending, std::stoi(op->name.substr(21)));
    } else if (op->name == "cutune_cp_async_commit") {
      ops_.commits += 1;
    } else {
      double n = op->name.starts_with("fma") ? 2 : 1;
      (op->type.is_float() ? ops_.float_ops : ops_.int_ops) += n * op->type.lanes;
    }
    IRVisitor::visit_node(op);
  }

  // The buffer an address_of(buffer, index) argument points into; nullptr for other forms.
  static const Buffer* address_buffer(const Expr& e) {
    const Call* call = e.as<Call>();
    if (!call || call->name != ir::kAddressOf || call->args.empty()) return nullptr;
    const Load* load = call->args[0].as<Load>();
    return load ? &load->buffer : nullptr;
  }

  // An address argument `width_bytes` wide: an access of that many bytes of its buffer (at
  // least one element) where it is address_of(buffer, index), else counted as any expression.
  void count_address(const Expr& e, int width_bytes, bool store) {
    if (const Buffer* buffer = address_buffer(e)) {
      const Load* load = e.as<Call>()->args[0].as<Load>();
      visit(load->index);
      const int lanes = std::max(1, width_bytes / (*buffer)->type.element_bytes());
      access(*buffer, load->index, lanes, store);
      return;
    }
    visit(e);
  }

  int loop_slot(const std::string& name) const {
    for (size_t i = 0; i < loop_names_.size(); ++i) {
      if (loop_names_[i] == name) return int(i);
    }
    return -1;
  }

  int buffer_slot(const BufferNode* b) {
    for (const auto& [node, slot] : buffer_cache_) {
      if (node == b) return slot;
    }
    int slot = -1;
    for (size_t i = 0; i < buffer_names_.size(); ++i) {
      if (buffer_names_[i] == b->name) slot = int(i);
    }
    buffer_cache_.emplace_back(b, slot);
    return slot;
  }

  // Charges the statement's operations, executed once per iteration of the innermost
  // enclosing loop.
  void charge() {
    const OpCount& ops = ops_;
    Extents x = scope_.extents();
    double runs = x.serial * x.threads * x.blocks * weight_;
    KernelStats& k = out_->kernel;
    k.mma_ops += ops.mma * runs / kWarp;
    k.async_copy_bytes += ops.async_bytes * runs;
    k.tma_copy_bytes += ops.tma_bytes * runs;
    k.async_commits_per_thread += ops.commits * x.serial * weight_;
    k.pipeline_depth = std::max(k.pipeline_depth, double(ops.wait_pending + 2));
    if (ops.float_ops == 0 && ops.int_ops == 0) return;
    out_->kernel.float_ops += ops.float_ops * runs;
    out_->kernel.int_ops += ops.int_ops * runs;
    if (scope_.frames.empty()) return;
    int slot = frame_slots_.back();
    if (slot < 0) return;
    out_->loops[slot].float_ops += ops.float_ops * runs;
    out_->loops[slot].int_ops += ops.int_ops * runs;
  }

  void access(const Buffer& buffer, const Expr& index, int lanes, bool store) {
    int slot = buffer_slot(buffer.get());
    if (slot < 0) return;
    BufferSlotStats& s = out_->buffers[slot];
    s.seen = true;
    int element_bytes = buffer->type.element_bytes();
    double bytes = double(lanes) * element_bytes * weight_;
    Extents x = scope_.extents();
    double runs = x.serial * x.threads * x.blocks;
    s.touched_thread += x.serial * bytes;
    s.touched_block += x.serial * x.threads * bytes;
    s.touched_total += runs * bytes;
    (store ? s.stores : s.loads) += runs * weight_;

    Extents d = scope_.extents(deps_of(index, scope_));
    double distinct_thread = d.serial * bytes;
    double distinct_block = distinct_thread * d.threads;
    double distinct_total = distinct_block * d.blocks;
    if (buffer->scope == MemoryScope::local) {
      distinct_block = distinct_thread * x.threads;
      distinct_total = distinct_block * x.blocks;
    } else if (buffer->scope == MemoryScope::shared) {
      distinct_total = distinct_block * x.blocks;
    }
    s.distinct_thread += distinct_thread;
    s.distinct_block += distinct_block;
    s.distinct_total += distinct_total;

    DominantAccess& dom = dominant_[slot];
    if (runs * bytes <= dom.bytes) return;
    dom.bytes = runs * bytes;
    compile_index(index, scope_, dom.index);
    dom.lanes = lanes;
    dom.element_bytes = element_bytes;
    dom.frames = int(scope_.frames.size());
    dom.inner = -1;
    dom.thread_x = -1;
    for (int f = dom.frames; f-- > 0;) {
      const LoopFrame& fr = scope_.frames[f];
      if (!is_bound(fr.kind) && dom.inner < 0) dom.inner = f;
      if (fr.kind == ForKind::thread_x && dom.thread_x < 0) {
        dom.thread_x = f;
        dom.thread_x_extent = fr.extent;
      }
    }
  }

  // The mean trip count of a loop whose extent varies with one enclosing loop of at most a
  // warp's iterations, over that loop's values: a split-K block's share of the K slices (the
  // last splits of an uneven division get fewer, or none). Otherwise the bound `extent`.
  double mean_trips(const Expr& extent_expr, int64_t extent) {
    if (as_const_int(extent_expr)) return double(extent);
    compile_index(extent_expr, scope_, trips_program_);
    const IndexProgram& p = trips_program_;
    if (!p.ok || p.deps == 0 || (p.deps & (p.deps - 1)) != 0) return double(extent);
    const int f = std::countr_zero(p.deps);
    const LoopFrame& fr = scope_.frames[size_t(f)];
    if (fr.min != 0 || fr.extent > kWarp) return double(extent);
    std::array<int64_t, kWarp> v{};
    evaluate_lanes(p, f, int(fr.extent), v.data());
    double sum = 0;
    for (int l = 0; l < int(fr.extent); ++l) sum += double(std::clamp<int64_t>(v[l], 0, extent));
    return sum / double(fr.extent);
  }

  void note_launch(ForKind kind, int64_t extent) {
    int axis = -1;
    int64_t* dims = nullptr;
    if (is_thread_binding(kind)) {
      axis = int(kind) - int(ForKind::thread_x);
      dims = block_;
    } else if (is_block_binding(kind)) {
      axis = int(kind) - int(ForKind::block_x);
      dims = grid_;
    }
    if (dims) dims[axis] = std::max(dims[axis], extent);
  }

  void finish() {
    KernelStats& k = out_->kernel;
    k.threads_per_block = double(block_[0] * block_[1] * block_[2]);
    k.blocks = double(grid_[0] * grid_[1] * grid_[2]);
    for (size_t i = 0; i < out_->buffers.size(); ++i) {
      BufferSlotStats& s = out_->buffers[i];
      if (!s.seen) continue;
      double cap_thread = s.allocated_bytes, cap_block = s.allocated_bytes,
             cap_total = s.allocated_bytes;
      if (s.scope == MemoryScope::local) {
        cap_block = cap_thread * k.threads_per_block;
        cap_total = cap_block * k.blocks;
      } else if (s.scope == MemoryScope::shared) {
        cap_total = cap_block * k.blocks;
      }
      s.distinct_thread = std::min(s.distinct_thread, cap_thread);
      s.distinct_block = std::min(s.distinct_block, cap_block);
      s.distinct_total = std::min(s.distinct_total, cap_total);
      strides_and_warp(dominant_[i], s);
    }
  }

  std::span<const std::string> loop_names_;
  std::span<const std::string> buffer_names_;
  LoopNestSummary* out_ = nullptr;
  LoopScope scope_;
  std::vector<int> frame_slots_;  // the loop slot of each frame, -1 for unnamed ones
  std::vector<std::pair<const BufferNode*, int>> buffer_cache_;
  std::vector<DominantAccess> dominant_;
  int64_t block_[3] = {1, 1, 1};
  int64_t grid_[3] = {1, 1, 1};
  std::vector<std::pair<std::string, double>> map_box_bytes_;  // tensor map -> box bytes
  IndexProgram trips_program_;                                 // mean_trips' scratch
  // The walk's state: the weight of the statement being visited, its operations, and what the
  // statement visited last returns.
  double weight_ = 1;
  OpCount ops_;
  double inner_ = 1;
};

}  // namespace

void summarize_loop_nest(const Kernel& kernel, std::span<const std::string> loop_names,
                         std::span<const std::string> buffer_names, LoopNestSummary& out) {
  thread_local LoopNestAnalyzer analyzer;
  analyzer.reset(loop_names, buffer_names, out);
  analyzer.run(kernel);
  out.kernel.min_blocks = kernel.min_blocks;
  out.kernel.persistent_blocks_per_sm = kernel.persistent_blocks_per_sm;
  out.kernel.cluster_x = kernel.cluster_x;
}

}  // namespace cutune::cost_model
