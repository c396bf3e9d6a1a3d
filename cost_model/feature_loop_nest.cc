#include "cost_model/feature_loop_nest.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "src/base/int_math.h"
#include "src/ir/intrinsics.h"
#include "src/ir/tma_intrinsics.h"

namespace cutune::cost_model {

namespace {

using namespace ir;

#define CUTUNE_BINARY_KINDS(X) \
  X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(Min) X(Max) X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(And) X(Or)

// The operands of a binary node, or false for any other kind.
bool binary_operands(const Expr& e, const Expr*& a, const Expr*& b) {
  switch (e.kind()) {
#define CUTUNE_CASE(name)                               \
  case NodeKind::name: {                                \
    const auto* op = static_cast<const name*>(e.get()); \
    a = &op->a;                                         \
    b = &op->b;                                         \
    return true;                                        \
  }
    CUTUNE_BINARY_KINDS(CUTUNE_CASE)
#undef CUTUNE_CASE
    default:
      return false;
  }
}

bool is_arithmetic(NodeKind k) {
  return k == NodeKind::Add || k == NodeKind::Sub || k == NodeKind::Mul || k == NodeKind::Div ||
         k == NodeKind::Mod || k == NodeKind::Min || k == NodeKind::Max;
}

// The IR's division and remainder, 0 for a zero divisor (a bound the analysis cannot use).
int64_t div_or_zero(int64_t a, int64_t b) { return b == 0 ? 0 : floor_div(a, b); }
int64_t mod_or_zero(int64_t a, int64_t b) { return b == 0 ? 0 : floor_mod(a, b); }

// A range of values; `known` false means unbounded.
struct Range {
  double lo = 0, hi = 0;
  bool known = false;
};

struct Frame {
  const std::string* name;
  int64_t min;
  int64_t extent;
  ForKind kind;
  // Products of the extents of this loop and those enclosing it: unbound, thread- and
  // block-bound ones.
  double serial, threads, blocks;
};

struct Let {
  const std::string* name;
  const Expr* value;
  uint64_t deps;  // bits of the frames the value depends on
  Range range;
};

// What evaluating an index needs: the loops and lets in scope, and a value for each loop.
struct Scope {
  std::vector<Frame> frames;
  std::vector<Let> lets;
};

struct OpCount {
  double float_ops = 0, int_ops = 0;
  double mma = 0, async_bytes = 0, commits = 0;  // tensor-core intrinsics, per thread
  int wait_pending = -1;                         // the largest cp.async wait_group N
  double tma_bytes = 0;                          // TMA box bytes issued, per thread
};

// One mma.m16n8k16 is 16·8·16 multiply-adds for the warp: 2·2048 / 32 flops per lane.
constexpr double kMmaFlopsPerLane = 2.0 * 16 * 8 * 16 / 32;

constexpr int kWarp = 32;
constexpr int kSectorBytes = 32;
constexpr int kBanks = 32;
constexpr int kBankBytes = 4;

// An index expression flattened to postfix, with loop variables resolved to frame positions
// and let-bound names inlined: evaluated many times per access (strides, a warp's lanes), so
// names are looked up once, when it is compiled.
struct Instr {
  NodeKind op;  // IntImm: push value; Var: push the value of frame `value`; else apply
  int64_t value = 0;
};

struct IndexProgram {
  std::vector<Instr> code;
  uint64_t deps = 0;  // bits of the frames it reads
  bool ok = true;     // false where it was too deep to evaluate with the fixed stack
};

constexpr int kStackDepth = 64;

void compile(const Expr& e, const Scope& scope, IndexProgram& p, int depth = 1) {
  if (depth > kStackDepth) {
    p.ok = false;
    return;
  }
  switch (e.kind()) {
    case NodeKind::IntImm:
      p.code.push_back({NodeKind::IntImm, static_cast<const IntImm*>(e.get())->value});
      return;
    case NodeKind::Var: {
      const std::string& name = static_cast<const Var*>(e.get())->name;
      for (size_t f = scope.frames.size(); f-- > 0;) {
        if (*scope.frames[f].name == name) {
          p.code.push_back({NodeKind::Var, int64_t(f)});
          if (f < 64) p.deps |= uint64_t{1} << f;
          return;
        }
      }
      for (size_t l = scope.lets.size(); l-- > 0;) {
        if (*scope.lets[l].name == name) return compile(*scope.lets[l].value, scope, p, depth);
      }
      p.code.push_back({NodeKind::IntImm, 0});
      return;
    }
    case NodeKind::Cast:
      return compile(static_cast<const Cast*>(e.get())->value, scope, p, depth);
    case NodeKind::Not:
      compile(static_cast<const Not*>(e.get())->a, scope, p, depth);
      p.code.push_back({NodeKind::Not});
      return;
    case NodeKind::Select: {
      const auto* op = static_cast<const Select*>(e.get());
      compile(op->condition, scope, p, depth);
      compile(op->true_value, scope, p, depth + 1);
      compile(op->false_value, scope, p, depth + 2);
      p.code.push_back({NodeKind::Select});
      return;
    }
    default:
      break;
  }
  const Expr *a, *b;
  if (!binary_operands(e, a, b) || !(e.type().is_int() || e.type().is_bool())) {
    p.code.push_back({NodeKind::IntImm, 0});
    return;
  }
  compile(*a, scope, p, depth);
  compile(*b, scope, p, depth + 1);
  p.code.push_back({e.kind()});
}

inline int64_t apply(NodeKind op, int64_t a, int64_t b) {
  switch (op) {
    case NodeKind::Add:
      return a + b;
    case NodeKind::Sub:
      return a - b;
    case NodeKind::Mul:
      return a * b;
    case NodeKind::Div:
      return div_or_zero(a, b);
    case NodeKind::Mod:
      return mod_or_zero(a, b);
    case NodeKind::Min:
      return std::min(a, b);
    case NodeKind::Max:
      return std::max(a, b);
    case NodeKind::EQ:
      return a == b;
    case NodeKind::NE:
      return a != b;
    case NodeKind::LT:
      return a < b;
    case NodeKind::LE:
      return a <= b;
    case NodeKind::GT:
      return a > b;
    case NodeKind::GE:
      return a >= b;
    case NodeKind::And:
      return a != 0 && b != 0;
    case NodeKind::Or:
      return a != 0 || b != 0;
    default:
      return 0;
  }
}

// apply() lane by lane, with the operation chosen once: the common ones become loops the
// compiler vectorises.
void apply_lanes(NodeKind op, int64_t* a, const int64_t* b, int lanes) {
  switch (op) {
    case NodeKind::Add:
      for (int l = 0; l < lanes; ++l) a[l] += b[l];
      return;
    case NodeKind::Sub:
      for (int l = 0; l < lanes; ++l) a[l] -= b[l];
      return;
    case NodeKind::Mul:
      for (int l = 0; l < lanes; ++l) a[l] *= b[l];
      return;
    case NodeKind::Min:
      for (int l = 0; l < lanes; ++l) a[l] = std::min(a[l], b[l]);
      return;
    case NodeKind::Max:
      for (int l = 0; l < lanes; ++l) a[l] = std::max(a[l], b[l]);
      return;
    default:
      for (int l = 0; l < lanes; ++l) a[l] = apply(op, a[l], b[l]);
      return;
  }
}

// Evaluates `p` for `lanes` values of the loop variable of frame `sweep` (0, 1, ..., lanes-1)
// at once, every other loop variable at 0: one dispatch per instruction for the whole warp,
// and a scalar step while an operand is the same on every lane.
void evaluate_lanes(const IndexProgram& p, int sweep, int lanes, int64_t* out) {
  struct Slot {
    bool uniform;
    int64_t v[kWarp];
  };
  Slot stack[kStackDepth + 2];
  int sp = 0;
  auto widen = [&](Slot& s) {
    if (!s.uniform) return;
    std::fill(s.v + 1, s.v + lanes, s.v[0]);
    s.uniform = false;
  };
  for (const Instr& in : p.code) {
    switch (in.op) {
      case NodeKind::IntImm:
        stack[sp].uniform = true;
        stack[sp++].v[0] = in.value;
        break;
      case NodeKind::Var:
        if (in.value == sweep) {
          stack[sp].uniform = false;
          for (int l = 0; l < lanes; ++l) stack[sp].v[l] = l;
        } else {
          stack[sp].uniform = true;
          stack[sp].v[0] = 0;
        }
        ++sp;
        break;
      case NodeKind::Not: {
        Slot& a = stack[sp - 1];
        for (int l = 0; l < (a.uniform ? 1 : lanes); ++l) a.v[l] = a.v[l] == 0;
        break;
      }
      case NodeKind::Select: {
        sp -= 2;
        Slot &c = stack[sp - 1], &t = stack[sp], &f = stack[sp + 1];
        if (c.uniform) {
          c = c.v[0] != 0 ? t : f;
          break;
        }
        widen(t);
        widen(f);
        for (int l = 0; l < lanes; ++l) c.v[l] = c.v[l] != 0 ? t.v[l] : f.v[l];
        break;
      }
      default: {
        --sp;
        Slot &a = stack[sp - 1], &b = stack[sp];
        if (a.uniform && b.uniform) {
          a.v[0] = apply(in.op, a.v[0], b.v[0]);
          break;
        }
        widen(a);
        widen(b);
        apply_lanes(in.op, a.v, b.v, lanes);
        break;
      }
    }
  }
  if (sp != 1) {
    std::fill(out, out + lanes, 0);
    return;
  }
  widen(stack[0]);
  std::copy(stack[0].v, stack[0].v + lanes, out);
}

uint64_t deps_of(const Expr& e, const Scope& scope) {
  switch (e.kind()) {
    case NodeKind::IntImm:
    case NodeKind::FloatImm:
      return 0;
    case NodeKind::Var: {
      const std::string& name = static_cast<const Var*>(e.get())->name;
      for (size_t f = scope.frames.size(); f-- > 0;) {
        if (*scope.frames[f].name == name) return f < 64 ? uint64_t{1} << f : 0;
      }
      for (size_t l = scope.lets.size(); l-- > 0;) {
        if (*scope.lets[l].name == name) return scope.lets[l].deps;
      }
      return 0;
    }
    case NodeKind::Cast:
      return deps_of(static_cast<const Cast*>(e.get())->value, scope);
    case NodeKind::Not:
      return deps_of(static_cast<const Not*>(e.get())->a, scope);
    case NodeKind::Select: {
      const auto* op = static_cast<const Select*>(e.get());
      return deps_of(op->condition, scope) | deps_of(op->true_value, scope) |
             deps_of(op->false_value, scope);
    }
    default:
      break;
  }
  const Expr *a, *b;
  return binary_operands(e, a, b) ? deps_of(*a, scope) | deps_of(*b, scope) : 0;
}

Range range_of(const Expr& e, const Scope& scope) {
  switch (e.kind()) {
    case NodeKind::IntImm: {
      double v = double(static_cast<const IntImm*>(e.get())->value);
      return {v, v, true};
    }
    case NodeKind::Var: {
      const std::string& name = static_cast<const Var*>(e.get())->name;
      for (size_t f = scope.frames.size(); f-- > 0;) {
        const Frame& fr = scope.frames[f];
        if (*fr.name == name) return {double(fr.min), double(fr.min + fr.extent - 1), true};
      }
      for (size_t l = scope.lets.size(); l-- > 0;) {
        if (*scope.lets[l].name == name) return scope.lets[l].range;
      }
      return {};
    }
    case NodeKind::Cast:
      return range_of(static_cast<const Cast*>(e.get())->value, scope);
    default:
      break;
  }
  const Expr *pa, *pb;
  if (!binary_operands(e, pa, pb)) return {};
  Range a = range_of(*pa, scope);
  Range b = range_of(*pb, scope);
  switch (e.kind()) {
    case NodeKind::Add:
      return {a.lo + b.lo, a.hi + b.hi, a.known && b.known};
    case NodeKind::Sub:
      return {a.lo - b.hi, a.hi - b.lo, a.known && b.known};
    case NodeKind::Mul: {
      if (!a.known || !b.known) return {};
      std::array<double, 4> c = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
      return {*std::min_element(c.begin(), c.end()), *std::max_element(c.begin(), c.end()), true};
    }
    case NodeKind::Div:
      if (!a.known || !b.known || b.lo != b.hi || b.lo <= 0) return {};
      return {std::floor(a.lo / b.lo), std::floor(a.hi / b.lo), true};
    case NodeKind::Mod:
      if (!b.known || b.lo != b.hi || b.lo <= 0) return {};
      if (a.known && a.lo >= 0 && a.hi < b.lo) return a;
      return {0, b.lo - 1, true};
    case NodeKind::Min:
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi), a.known && b.known};
    case NodeKind::Max:
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi), a.known && b.known};
    default:
      return {};
  }
}

// The fraction of the iteration space where `cond` holds, with the operands of a comparison
// taken as independent and uniform over their ranges; 1 where nothing is known.
double probability(const Expr& cond, const Scope& scope) {
  NodeKind k = cond.kind();
  if (k == NodeKind::IntImm) return static_cast<const IntImm*>(cond.get())->value != 0;
  if (k == NodeKind::Not) return 1.0 - probability(static_cast<const Not*>(cond.get())->a, scope);
  if (k == NodeKind::Call && static_cast<const Call*>(cond.get())->name == ir::kElectOne) {
    return 1.0 / 32;  // one lane of the warp
  }
  const Expr *pa, *pb;
  if (!binary_operands(cond, pa, pb)) return 1.0;
  if (k == NodeKind::And) return probability(*pa, scope) * probability(*pb, scope);
  if (k == NodeKind::Or) {
    double p = probability(*pa, scope), q = probability(*pb, scope);
    return p + q - p * q;
  }
  if (is_arithmetic(k) || !pa->type().is_int()) return 1.0;
  Range a = range_of(*pa, scope), b = range_of(*pb, scope);
  if (!a.known || !b.known) return 1.0;
  // x = a - b over [lo, hi], integer valued.
  double lo = a.lo - b.hi, hi = a.hi - b.lo, n = hi - lo + 1;
  auto below = [&](double t) { return std::clamp((t - lo) / n, 0.0, 1.0); };  // P(x < t)
  switch (k) {
    case NodeKind::LT:
      return below(0);
    case NodeKind::LE:
      return below(1);
    case NodeKind::GT:
      return 1.0 - below(1);
    case NodeKind::GE:
      return 1.0 - below(0);
    case NodeKind::EQ:
      return (lo <= 0 && hi >= 0) ? 1.0 / n : 0.0;
    case NodeKind::NE:
      return (lo <= 0 && hi >= 0) ? 1.0 - 1.0 / n : 1.0;
    default:
      return 1.0;
  }
}

// The access of a buffer that moves the most bytes, kept to evaluate its strides and warp
// behaviour once the walk is over.
struct DominantAccess {
  double bytes = -1;
  IndexProgram index;
  int lanes = 1;
  int element_bytes = 4;
  int frames = 0;     // loops in scope
  int inner = -1;     // the innermost unbound one, or -1
  int thread_x = -1;  // the threadIdx.x one, or -1
  int64_t thread_x_extent = 1;
};

// Reused across calls on one thread (see summarize_loop_nest), so that its vectors keep their
// capacity: allocation would otherwise cost as much as the analysis.
class Analyzer {
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
  // The buffer an address_of(buffer, index) argument points into; nullptr for other forms.
  static const Buffer* address_buffer(const Expr& e) {
    if (e.kind() != NodeKind::Call) return nullptr;
    const auto* call = static_cast<const Call*>(e.get());
    if (call->name != ir::kAddressOf || call->args.empty() ||
        call->args[0].kind() != NodeKind::Load) {
      return nullptr;
    }
    return &static_cast<const Load*>(call->args[0].get())->buffer;
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

  // Products of the enclosing loops' extents: unbound ones (iterations per thread), thread-
  // and block-bound ones; restricted to the frames in `mask`.
  struct Extents {
    double serial = 1, threads = 1, blocks = 1;
  };
  Extents extents() const {
    if (scope_.frames.empty()) return {};
    const Frame& f = scope_.frames.back();
    return {f.serial, f.threads, f.blocks};
  }
  Extents extents(uint64_t mask) const {
    Extents x;
    for (size_t f = 0; f < scope_.frames.size(); ++f) {
      if (f < 64 && !(mask >> f & 1)) continue;
      const Frame& fr = scope_.frames[f];
      double e = double(fr.extent);
      if (is_thread_binding(fr.kind)) {
        x.threads *= e;
      } else if (is_block_binding(fr.kind)) {
        x.blocks *= e;
      } else {
        x.serial *= e;
      }
    }
    return x;
  }

  void count(const Expr& e, double weight, OpCount& ops) {
    NodeKind k = e.kind();
    switch (k) {
      case NodeKind::IntImm:
      case NodeKind::FloatImm:
      case NodeKind::Var:
        return;
      case NodeKind::Load: {
        const auto* op = static_cast<const Load*>(e.get());
        count(op->index, weight, ops);
        access(op->buffer, op->index, op->lanes(), false, weight);
        return;
      }
      case NodeKind::Cast:
        count(static_cast<const Cast*>(e.get())->value, weight, ops);
        return;
      case NodeKind::Not:
        ops.int_ops += 1;
        count(static_cast<const Not*>(e.get())->a, weight, ops);
        return;
      case NodeKind::Select: {
        const auto* op = static_cast<const Select*>(e.get());
        ops.int_ops += 1;
        count(op->condition, weight, ops);
        count(op->true_value, weight, ops);
        count(op->false_value, weight, ops);
        return;
      }
      case NodeKind::Call: {
        const auto* op = static_cast<const Call*>(e.get());
        // A copy's or ldmatrix's address arguments are accesses of their width: cp.async moves
        // N bytes from global (the source) into shared memory (the destination) a thread;
        // ldmatrix.xC reads C 8x16-byte matrices from shared memory a warp, 4·C bytes a lane
        // on average. Any other address_of argument counts as a one-element access.
        if (op->name.starts_with("cutune_cp_async_") && op->args.size() == 3) {
          const int width_bytes = std::atoi(op->name.c_str() + 16);
          if (width_bytes > 0) {
            count_address(op->args[0], width_bytes, true, weight, ops);
            count_address(op->args[1], width_bytes, false, weight, ops);
            count(op->args[2], weight, ops);
            ops.async_bytes += width_bytes;
            return;
          }
        } else if (op->name.starts_with("cutune_ldmatrix_x") && op->args.size() == 2) {
          const int width_bytes = 4 * std::atoi(op->name.c_str() + 17);
          if (width_bytes > 0) {
            count(op->args[0], weight, ops);
            count_address(op->args[1], width_bytes, false, weight, ops);
            ops.int_ops += 1;  // as any other call
            return;
          }
        }
        if (op->name == ir::kAddressOf) {
        } else if (op->name.starts_with("cutune_mma_")) {
          ops.mma += 1;
          ops.float_ops += kMmaFlopsPerLane;
        } else if (op->name.starts_with("cutune_wgmma_m64n")) {
          // A warpgroup's m64nNk16 is N/8 m16n8k16s per warp: counted as that many mma.sync
          // calls, with its 2·64·N·16/128 flops per thread.
          const int n = std::stoi(op->name.substr(17));
          ops.mma += n / 8.0;
          ops.float_ops += 2.0 * 64 * n * 16 / 128;
        } else if (op->name == "cutune_tma_load_2d" && op->args.size() >= 3) {
          // A box of its tensor map lands in shared memory; the ring is the barriers the
          // copies complete on (the allocation the barrier argument points into).
          if (op->args[1].kind() == NodeKind::Var) {
            const std::string& map = static_cast<const Var*>(op->args[1].get())->name;
            for (const auto& [name, bytes] : map_box_bytes_)
              if (name == map) ops.tma_bytes += bytes;
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
          ops.int_ops += 1;  // as any other call
        } else if (op->name.starts_with("cutune_cp_async_wait_")) {
          ops.wait_pending = std::max(ops.wait_pending, std::stoi(op->name.substr(21)));
        } else if (op->name == "cutune_cp_async_commit") {
          ops.commits += 1;
        } else {
          double n = op->name.starts_with("fma") ? 2 : 1;
          (op->type.is_float() ? ops.float_ops : ops.int_ops) += n * op->type.lanes;
        }
        for (const Expr& arg : op->args) count(arg, weight, ops);
        return;
      }
      default:
        break;
    }
    const Expr *a, *b;
    if (!binary_operands(e, a, b)) return;
    bool is_float = is_arithmetic(k) && e.type().is_float();
    (is_float ? ops.float_ops : ops.int_ops) += e.type().lanes;
    count(*a, weight, ops);
    count(*b, weight, ops);
  }

  // An address argument `width_bytes` wide: an access of that many bytes of its buffer (at
  // least one element) where it is address_of(buffer, index), else counted as any expression.
  void count_address(const Expr& e, int width_bytes, bool store, double weight, OpCount& ops) {
    if (const Buffer* buffer = address_buffer(e)) {
      const auto* load = static_cast<const Load*>(static_cast<const Call*>(e.get())->args[0].get());
      count(load->index, weight, ops);
      const int lanes = std::max(1, width_bytes / (*buffer)->type.element_bytes());
      access(*buffer, load->index, lanes, store, weight);
      return;
    }
    count(e, weight, ops);
  }

  // Charges operations executed once per iteration of the innermost enclosing loop.
  void charge(const OpCount& ops, double weight) {
    Extents x = extents();
    double runs = x.serial * x.threads * x.blocks * weight;
    KernelStats& k = out_->kernel;
    k.mma_ops += ops.mma * runs / kWarp;
    k.async_copy_bytes += ops.async_bytes * runs;
    k.tma_copy_bytes += ops.tma_bytes * runs;
    k.async_commits_per_thread += ops.commits * x.serial * weight;
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

  void access(const Buffer& buffer, const Expr& index, int lanes, bool store, double weight) {
    int slot = buffer_slot(buffer.get());
    if (slot < 0) return;
    BufferSlotStats& s = out_->buffers[slot];
    s.seen = true;
    int element_bytes = buffer->type.element_bytes();
    double bytes = double(lanes) * element_bytes * weight;
    Extents x = extents();
    double runs = x.serial * x.threads * x.blocks;
    s.touched_thread += x.serial * bytes;
    s.touched_block += x.serial * x.threads * bytes;
    s.touched_total += runs * bytes;
    (store ? s.stores : s.loads) += runs * weight;

    Extents d = extents(deps_of(index, scope_));
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
    dom.index.code.clear();
    dom.index.deps = 0;
    dom.index.ok = true;
    compile(index, scope_, dom.index);
    dom.lanes = lanes;
    dom.element_bytes = element_bytes;
    dom.frames = int(scope_.frames.size());
    dom.inner = -1;
    dom.thread_x = -1;
    for (int f = dom.frames; f-- > 0;) {
      const Frame& fr = scope_.frames[f];
      if (!is_bound(fr.kind) && dom.inner < 0) dom.inner = f;
      if (fr.kind == ForKind::thread_x && dom.thread_x < 0) {
        dom.thread_x = f;
        dom.thread_x_extent = fr.extent;
      }
    }
  }

  // Strides of the dominant access, and the sectors (global) or shared-memory wavefronts it
  // takes for the first warp.
  void strides_and_warp(BufferSlotStats& s, const DominantAccess& dom) {
    s.lanes = dom.lanes;
    if (!dom.index.ok) return;
    int tx = dom.thread_x;
    int lanes_active = int(std::min<int64_t>(kWarp, tx < 0 ? 1 : dom.thread_x_extent));
    if (s.scope == MemoryScope::local) lanes_active = std::min(lanes_active, 2);
    std::array<int64_t, kWarp> first;
    evaluate_lanes(dom.index, tx, std::max(lanes_active, 2), first.data());
    int64_t base = first[0];
    s.stride_thread_x = tx >= 0 ? double(std::llabs(first[1] - base)) : 0.0;
    if (dom.inner >= 0) {
      std::array<int64_t, 2> step;
      evaluate_lanes(dom.index, dom.inner, 2, step.data());
      s.stride_inner = double(std::llabs(step[1] - step[0]));
    }
    if (s.scope == MemoryScope::local) return;

    // The distinct elements lanes [from, to) touch, sorted, in words[0, n).
    std::array<int64_t, kWarp * 4> words;
    auto gather = [&](int from, int to) {
      int n = 0;
      for (int lane = from; lane < to; ++lane) {
        for (int l = 0; l < dom.lanes && n < int(words.size()); ++l) words[n++] = first[lane] + l;
      }
      std::sort(words.begin(), words.begin() + n);
      return int(std::unique(words.begin(), words.begin() + n) - words.begin());
    };
    int n = gather(0, lanes_active);
    double distinct_bytes = double(n) * dom.element_bytes;
    s.warp_bytes = distinct_bytes;
    if (s.scope == MemoryScope::shared) {
      s.warp_ideal = std::ceil(distinct_bytes / (kBanks * kBankBytes));
      // Lanes a phase serves: 128 bytes of requests (8-byte accesses by half-warps, 16-byte
      // ones by quarter-warps).
      const int access_bytes = dom.lanes * dom.element_bytes;
      const int phase = std::clamp(kBanks * kBankBytes / std::max(access_bytes, 1), 1, kWarp);
      double wavefronts = 0;
      for (int from = 0; from < lanes_active; from += phase) {
        const int m = gather(from, std::min(from + phase, lanes_active));
        std::array<int, kBanks> per_bank{};
        int worst = 0;
        int64_t last_word = std::numeric_limits<int64_t>::min();
        for (int w = 0; w < m; ++w) {
          // Elements narrower than a word share it: count each word once.
          const int64_t word = floor_div(words[w] * dom.element_bytes, kBankBytes);
          if (word == last_word) continue;
          last_word = word;
          worst = std::max(worst, ++per_bank[floor_mod(word, kBanks)]);
        }
        wavefronts += std::max<double>(
            worst, std::ceil(double(m) * dom.element_bytes / (kBanks * kBankBytes)));
      }
      s.warp_transactions = std::max(wavefronts, s.warp_ideal);
    } else {
      for (int w = 0; w < n; ++w) words[w] = floor_div(words[w] * dom.element_bytes, kSectorBytes);
      s.warp_transactions = double(std::unique(words.begin(), words.begin() + n) - words.begin());
      s.warp_ideal = std::ceil(distinct_bytes / kSectorBytes);
    }
  }

  double walk(const Stmt& s, double weight) {
    switch (s.kind()) {
      case NodeKind::For: {
        const auto* op = s.as<For>();
        Range r = range_of(op->extent, scope_);
        int64_t extent = r.known ? std::max<int64_t>(int64_t(r.hi), 1) : 1;
        int64_t min = as_const_int(op->min).value_or(0);
        // The loop variable ranges up to the bound; the work is counted at the mean trip count.
        const double trips = mean_trips(op->extent, extent);
        Extents x = extents();
        double outer = x.serial * x.threads * x.blocks;
        int slot = loop_slot(op->var);
        if (slot >= 0) {
          LoopSlotStats& l = out_->loops[slot];
          l.seen = true;
          l.extent = std::max(l.extent, double(extent));
          l.trips += outer * trips * weight;
          l.depth = std::max(l.depth, double(scope_.frames.size()));
          l.outer = std::max(l.outer, outer);
          l.kinds |= uint16_t(1u << unsigned(op->kind));
        }
        note_launch(op->kind, extent);
        Frame frame{&op->var, min, extent, op->kind, x.serial, x.threads, x.blocks};
        double e = double(extent);
        (is_thread_binding(op->kind)  ? frame.threads
         : is_block_binding(op->kind) ? frame.blocks
                                      : frame.serial) *= e;
        scope_.frames.push_back(frame);
        frame_slots_.push_back(slot);
        double inner = walk(op->body, weight * trips / double(extent));
        scope_.frames.pop_back();
        frame_slots_.pop_back();
        if (slot >= 0) out_->loops[slot].inner = std::max(out_->loops[slot].inner, inner);
        return inner * trips;
      }
      case NodeKind::Allocate: {
        const auto* op = s.as<Allocate>();
        double bytes = double(op->buffer->elements) * op->buffer->type.element_bytes();
        if (op->buffer->scope == MemoryScope::shared) out_->kernel.shared_bytes += bytes;
        if (op->buffer->scope == MemoryScope::local) out_->kernel.local_bytes += bytes;
        int slot = buffer_slot(op->buffer.get());
        if (slot >= 0) {
          out_->buffers[slot].scope = op->buffer->scope;
          out_->buffers[slot].allocated_bytes = bytes;
        }
        return walk(op->body, weight);
      }
      case NodeKind::Store: {
        const auto* op = s.as<Store>();
        OpCount ops;
        count(op->index, weight, ops);
        count(op->value, weight, ops);
        access(op->buffer, op->index, op->lanes(), true, weight);
        charge(ops, weight);
        return 1;
      }
      case NodeKind::Sync:
        out_->kernel.syncs_per_thread += extents().serial * weight;
        return 1;
      case NodeKind::IfThenElse: {
        const auto* op = s.as<IfThenElse>();
        OpCount ops;
        count(op->condition, weight, ops);
        charge(ops, weight);
        double p = probability(op->condition, scope_);
        double inner = walk(op->then_case, weight * p);
        if (op->else_case.defined()) inner = std::max(inner, walk(op->else_case, weight * (1 - p)));
        return inner;
      }
      case NodeKind::Block: {
        double inner = 1;
        for (const Stmt& child : s.as<Block>()->stmts) inner = std::max(inner, walk(child, weight));
        return inner;
      }
      case NodeKind::LetStmt: {
        const auto* op = s.as<LetStmt>();
        // A broadcast (warp_uniform) stands for its operand: the same value, known in every
        // lane, at the cost of the operand.
        const Expr& value = ir::warp_uniform_operand(op->value);
        OpCount ops;
        count(value, weight, ops);
        charge(ops, weight);
        scope_.lets.push_back({&op->var, &value, deps_of(value, scope_), range_of(value, scope_)});
        double inner = walk(op->body, weight);
        scope_.lets.pop_back();
        return inner;
      }
      case NodeKind::Evaluate: {
        OpCount ops;
        count(s.as<Evaluate>()->value, weight, ops);
        charge(ops, weight);
        return 1;
      }
      default:
        return 1;
    }
  }

  // The mean trip count of a loop whose extent varies with one enclosing loop of at most a
  // warp's iterations, over that loop's values: a split-K block's share of the K slices (the
  // last splits of an uneven division get fewer, or none). Otherwise the bound `extent`.
  double mean_trips(const Expr& extent_expr, int64_t extent) const {
    if (as_const_int(extent_expr)) return double(extent);
    IndexProgram p;
    compile(extent_expr, scope_, p);
    if (!p.ok || p.deps == 0 || (p.deps & (p.deps - 1)) != 0) return double(extent);
    const int f = std::countr_zero(p.deps);
    const Frame& fr = scope_.frames[size_t(f)];
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
      strides_and_warp(s, dominant_[i]);
    }
  }

  std::span<const std::string> loop_names_;
  std::span<const std::string> buffer_names_;
  LoopNestSummary* out_ = nullptr;
  Scope scope_;
  std::vector<int> frame_slots_;  // the loop slot of each frame, -1 for unnamed ones
  std::vector<std::pair<const BufferNode*, int>> buffer_cache_;
  std::vector<DominantAccess> dominant_;
  int64_t block_[3] = {1, 1, 1};
  int64_t grid_[3] = {1, 1, 1};
  std::vector<std::pair<std::string, double>> map_box_bytes_;  // tensor map -> box bytes
};

}  // namespace

void summarize_loop_nest(const Kernel& kernel, std::span<const std::string> loop_names,
                         std::span<const std::string> buffer_names, LoopNestSummary& out) {
  thread_local Analyzer analyzer;
  analyzer.reset(loop_names, buffer_names, out);
  analyzer.run(kernel);
  out.kernel.min_blocks = kernel.min_blocks;
}

}  // namespace cutune::cost_model
