#include "src/ir/verify.h"

#include <set>

#include <fmt/format.h>

#include "src/ir/bounds.h"
#include "src/ir/hopper_intrinsics.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_visitor.h"
#include "src/ir/tma_intrinsics.h"

namespace cutune::ir {

namespace {

// The compute capability in "sm_90", "sm_90a" or "sm_100f" as 90, 100; -1 when unreadable.
int arch_number(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return -1;
  int n = 0;
  size_t i = 3;
  for (; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) n = n * 10 + (arch[i] - '0');
  return i == 3 ? -1 : n;
}

int axis_of(ForKind k) {
  switch (k) {
    case ForKind::block_x:
    case ForKind::thread_x:
      return 0;
    case ForKind::block_y:
    case ForKind::thread_y:
      return 1;
    default:
      return 2;
  }
}

// Does `e` mention any of `names`?
bool mentions(const Expr& e, const std::set<std::string>& names) {
  struct Finder : IRVisitor {
    const std::set<std::string>& names;
    bool found = false;
    explicit Finder(const std::set<std::string>& n) : names(n) {}
    using IRVisitor::visit_node;
    void visit_node(const Var* op) override { found = found || names.count(op->name) > 0; }
    // A load may return different values per thread even at a uniform index only if memory
    // differs; shared memory written by threads is treated as thread-dependent.
    void visit_node(const Load* op) override {
      if (op->buffer->scope != MemoryScope::global) found = true;
      IRVisitor::visit_node(op);
    }
  } f(names);
  f.visit(e);
  return f.found;
}

class Verifier : public IRVisitor {
 public:
  Verifier(const Kernel& k, const TargetLimits& limits) : kernel_(k), limits_(limits) {
    for (int a = 0; a < 3; ++a) {
      thread_extent_[a] = 0;
      block_extent_[a] = 0;
    }
  }

  VerifyResult run() {
    visit(kernel_.body);
    VerifyResult r;
    r.errors = std::move(errors_);
    for (int a = 0; a < 3; ++a) {
      r.launch.grid[a] = block_extent_[a] ? block_extent_[a] : 1;
      r.launch.block[a] = thread_extent_[a] ? thread_extent_[a] : 1;
    }
    r.launch.shared_bytes = shared_bytes_;
    r.launch.local_bytes = local_bytes_;
    check_limits(r);
    return r;
  }

  using IRVisitor::visit_node;

  void visit_node(const For* op) override {
    auto extent = as_const_int(op->extent);
    if (is_bound(op->kind)) {
      int a = axis_of(op->kind);
      int64_t* slot = is_thread_binding(op->kind) ? &thread_extent_[a] : &block_extent_[a];
      if (*slot != 0 && *slot != *extent) {
        error("loop {} bound to {} has extent {}, but another loop bound to it has {}", op->var,
              for_kind_name(op->kind), *extent, *slot);
      }
      *slot = *extent;
      if (is_block_binding(op->kind) && loop_depth_ > block_depth_) {
        error("loop {} is bound to {} inside another loop", op->var, for_kind_name(op->kind));
      }
    }
    bool divergent = mentions(op->min, thread_vars_) || mentions(op->extent, thread_vars_);
    if (is_thread_binding(op->kind)) thread_vars_.insert(op->var);
    if (op->kind == ForKind::thread_x) thread_x_vars_.insert(op->var);
    env_[op->var] = Interval{0, extent ? std::optional<int64_t>(*extent - 1) : std::nullopt};
    if (!is_bound(op->kind)) {
      auto lo = bounds_of(op->min, env_).lo;
      auto ext_hi = bounds_of(op->extent, env_).hi;
      std::optional<int64_t> hi;
      if (lo && ext_hi) hi = *lo + *ext_hi - 1;
      auto mn = bounds_of(op->min, env_);
      env_[op->var] = Interval{mn.lo, hi ? hi : mn.hi};
      if (!ext_hi) env_[op->var].hi.reset();
    }
    // Thread-bound loops count as loops here: a block binding must enclose them too.
    ++loop_depth_;
    if (is_block_binding(op->kind)) ++block_depth_;
    divergent_depth_ += divergent;
    visit(op->body);
    divergent_depth_ -= divergent;
    if (is_block_binding(op->kind)) --block_depth_;
    --loop_depth_;
    env_.erase(op->var);
  }

  void visit_node(const IfThenElse* op) override {
    visit(op->condition);
    bool divergent = mentions(op->condition, thread_vars_);
    // A condition that depends on the thread only through warpgroup indices (warp
    // specialisation) keeps every warpgroup together: warp and warpgroup collectives may sit
    // under it, a block-wide barrier may not.
    bool per_warpgroup = divergent && !mentions(op->condition, non_warpgroup_thread_vars());
    if (per_warpgroup) uses_warpgroup_conditions_ = true;
    divergent_depth_ += divergent && !per_warpgroup;
    warpgroup_divergent_depth_ += per_warpgroup;
    visit(op->then_case);
    visit(op->else_case);
    divergent_depth_ -= divergent && !per_warpgroup;
    warpgroup_divergent_depth_ -= per_warpgroup;
  }

  void visit_node(const LetStmt* op) override {
    visit(op->value);
    bool thread_dependent = mentions(op->value, thread_vars_);
    if (thread_dependent) thread_vars_.insert(op->var);
    // A broadcast (warp_uniform) has the bounds, and is the warpgroup index, of its operand.
    const Expr& value = warp_uniform_operand(op->value);
    bool warpgroup_index = thread_dependent && is_warpgroup_index(value);
    if (warpgroup_index) warpgroup_vars_.insert(op->var);
    if (value.type().is_int()) env_[op->var] = bounds_of(value, env_);
    visit(op->body);
    env_.erase(op->var);
    if (thread_dependent) thread_vars_.erase(op->var);
    if (warpgroup_index) warpgroup_vars_.erase(op->var);
  }

  void visit_node(const Sync*) override {
    if (divergent_depth_ > 0 || warpgroup_divergent_depth_ > 0) {
      error("a barrier (sync) is under a thread-dependent condition");
    }
  }

  // mma, ldmatrix, stmatrix, warp_uniform and elect_one are warp-collective: every lane must
  // reach them
  // together.
  void visit_node(const Call* op) override {
    IRVisitor::visit_node(op);
    bool collective = op->name.rfind("cutune_mma_", 0) == 0 ||
                      op->name.rfind("cutune_ldmatrix_", 0) == 0 || op->name == kWarpUniform ||
                      op->name == kElectOne || op->name == "cutune_stmatrix_x4";
    if (collective && divergent_depth_ > 0) {
      error("warp-collective {} is under a thread-dependent condition", op->name);
    }
    if (is_warpgroup_collective(op->name)) {
      uses_warpgroup_ = true;
      if (divergent_depth_ > 0) {
        error("warpgroup-collective {} is under a thread-dependent condition", op->name);
      }
    }
    if (needs_sm90a(op->name) && sm90a_user_.empty()) sm90a_user_ = op->name;
    if (sm90_user_.empty() && is_tma_intrinsic(op->name)) sm90_user_ = op->name;
  }

  void visit_node(const Allocate* op) override {
    int64_t bytes = op->buffer->elements * op->buffer->type.bytes();
    if (op->buffer->scope == MemoryScope::shared) shared_bytes_ += bytes;
    if (op->buffer->scope == MemoryScope::local) local_bytes_ += bytes;
    visit(op->body);
  }

  void visit_node(const Load* op) override {
    IRVisitor::visit_node(op);
    check_index(op->buffer, op->index, op->lanes(), "load from");
  }

  void visit_node(const Store* op) override {
    IRVisitor::visit_node(op);
    check_index(op->buffer, op->index, op->lanes(), "store to");
  }

 private:
  // threadIdx.x / (a multiple of 128): the same for the 128 threads of a warpgroup while the
  // block's x extent is a multiple of 128 (checked at the end).
  bool is_warpgroup_index(const Expr& e) const {
    if (e.kind() != NodeKind::Div) return false;
    const auto* d = static_cast<const Div*>(e.get());
    auto divisor = as_const_int(d->b);
    if (!divisor || *divisor <= 0 || *divisor % 128 != 0 || d->a.kind() != NodeKind::Var) {
      return false;
    }
    const std::string& name = static_cast<const Var*>(d->a.get())->name;
    return thread_x_vars_.count(name) > 0;
  }

  std::set<std::string> non_warpgroup_thread_vars() const {
    std::set<std::string> out;
    for (const std::string& v : thread_vars_)
      if (warpgroup_vars_.count(v) == 0) out.insert(v);
    return out;
  }

  template <typename... Args>
  void error(fmt::format_string<Args...> f, Args&&... args) {
    errors_.push_back(fmt::format(f, std::forward<Args>(args)...));
  }

  void check_index(const Buffer& b, const Expr& index, int lanes, const char* what) {
    Interval i = bounds_of(index, env_);
    if ((i.lo && *i.lo < 0) || (i.hi && *i.hi + lanes > b->elements)) {
      // Only a provable violation on every path is an error; guards make most accesses
      // conditional, so report only when the whole range is outside.
      bool all_outside = (i.hi && *i.hi < 0) || (i.lo && *i.lo + lanes > b->elements);
      if (all_outside) {
        error("{} {} at an index always outside its {} elements", what, b->name, b->elements);
      }
    }
  }

  void check_limits(VerifyResult& r) {
    const LaunchShape& l = r.launch;
    // wgmma and setmaxnreg exist only in sm_90a, the architecture-specific feature set of
    // compute capability 9.0 (sm_100a and later dropped wgmma); the builder compiles such a
    // kernel for sm_90a when the target is sm_90.
    if (!sm90a_user_.empty() && limits_.arch != "sm_90" && limits_.arch != "sm_90a") {
      r.errors.push_back(fmt::format("{} needs sm_90a (Hopper's wgmma feature set), but the "
                                     "target is {}",
                                     sm90a_user_, limits_.arch));
    }
    // mbarrier transaction counts, TMA and the async proxy fence arrived with sm_90.
    if (!sm90_user_.empty() && arch_number(limits_.arch) < 90) {
      r.errors.push_back(fmt::format("{} needs sm_90 or later (Hopper's TMA and mbarrier "
                                     "transactions), but the target is {}",
                                     sm90_user_, limits_.arch));
    }
    if (uses_warpgroup_conditions_ && (l.block[0] % 128 != 0)) {
      r.errors.push_back(
          fmt::format("a condition on threadIdx.x / 128 is per warpgroup only for "
                      "a block x extent that is a multiple of 128, got {}",
                      l.block[0]));
    }
    if (uses_warpgroup_ && l.threads_per_block() % 128 != 0) {
      r.errors.push_back(fmt::format("warpgroup intrinsics need a multiple of 128 threads per "
                                     "block, got {}",
                                     l.threads_per_block()));
    }
    if (l.threads_per_block() > limits_.max_threads_per_block) {
      r.errors.push_back(fmt::format("{} threads per block exceed the limit of {}",
                                     l.threads_per_block(), limits_.max_threads_per_block));
    }
    static const char* kAxis = "xyz";
    for (int a = 0; a < 3; ++a) {
      if (l.block[a] > limits_.max_block_dim[a]) {
        r.errors.push_back(fmt::format("block dimension {} = {} exceeds {}", kAxis[a], l.block[a],
                                       limits_.max_block_dim[a]));
      }
      if (l.grid[a] > limits_.max_grid_dim[a]) {
        r.errors.push_back(fmt::format("grid dimension {} = {} exceeds {}", kAxis[a], l.grid[a],
                                       limits_.max_grid_dim[a]));
      }
    }
    if (l.shared_bytes > limits_.max_shared_bytes_optin) {
      r.errors.push_back(fmt::format("{} bytes of shared memory exceed the {} limit of {}",
                                     l.shared_bytes, limits_.arch, limits_.max_shared_bytes_optin));
    }
    if (l.local_bytes > limits_.max_local_bytes_per_thread) {
      r.errors.push_back(fmt::format("{} bytes of local arrays per thread exceed {}", l.local_bytes,
                                     limits_.max_local_bytes_per_thread));
    }
  }

  const Kernel& kernel_;
  const TargetLimits& limits_;
  std::vector<std::string> errors_;
  int64_t thread_extent_[3];
  int64_t block_extent_[3];
  int64_t shared_bytes_ = 0;
  int64_t local_bytes_ = 0;
  int loop_depth_ = 0;
  int block_depth_ = 0;
  int divergent_depth_ = 0;
  int warpgroup_divergent_depth_ = 0;  // conditions uniform across each warpgroup
  bool uses_warpgroup_ = false;
  bool uses_warpgroup_conditions_ = false;
  std::string sm90a_user_;  // the first sm_90a-only intrinsic, if any
  std::string sm90_user_;   // the first TMA/mbarrier intrinsic, if any
  std::set<std::string> thread_vars_;
  std::set<std::string> thread_x_vars_;
  std::set<std::string> warpgroup_vars_;  // let-bound threadIdx.x / (128·n)
  BoundsEnv env_;
};

}  // namespace

VerifyResult verify(const Kernel& kernel, const TargetLimits& limits) {
  Verifier v(kernel, limits);
  return v.run();
}

}  // namespace cutune::ir
