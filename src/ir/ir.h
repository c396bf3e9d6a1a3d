#pragma once
// The loop IR: immutable nodes held by value-like handles (`Expr`, `Stmt`) around
// std::shared_ptr<const Node>. Nodes are built only through their `make(...)`, which checks
// invariants; a node never changes after it is built, so subtrees are shared freely.
//
// Conventions:
// - Integer division and modulo are *floor* division and floor modulo (Div, Mod); code
//   generation emits C's `/` and `%` where it can prove both operands non-negative.
// - Loops are (min, extent): the loop variable takes min, min+1, ..., min+extent-1.
// - Buffers are flat: a Load or Store names a buffer and one element index. A vector access
//   (lanes 2 or 4) touches elements index .. index+lanes-1, and index must be a multiple of
//   lanes (the template's job; the verifier checks what it can).
// - Variables are compared by name: a template gives distinct loops distinct names.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/ir/tensor_map.h"
#include "src/ir/type.h"

namespace cutune::ir {

// Every node kind, once. Adding a node is one line here plus its struct below; the visitor,
// mutator, printer and equality are driven by these lists. The binary nodes (one struct
// template, BinaryNode, two operands `a` and `b`) are a sub-list of their own, for the passes
// that treat them alike.
#define CUTUNE_IR_BINARY_NODES(X) \
  X(Add)                          \
  X(Sub)                          \
  X(Mul)                          \
  X(Div)                          \
  X(Mod)                          \
  X(Min)                          \
  X(Max)                          \
  X(EQ)                           \
  X(NE)                           \
  X(LT)                           \
  X(LE)                           \
  X(GT)                           \
  X(GE)                           \
  X(And)                          \
  X(Or)

#define CUTUNE_IR_EXPR_NODES(X) \
  X(IntImm)                     \
  X(FloatImm)                   \
  X(Var)                        \
  CUTUNE_IR_BINARY_NODES(X)     \
  X(Not)                        \
  X(Select)                     \
  X(Load)                       \
  X(Cast)                       \
  X(Call)

#define CUTUNE_IR_STMT_NODES(X) \
  X(For)                        \
  X(Allocate)                   \
  X(Store)                      \
  X(Sync)                       \
  X(IfThenElse)                 \
  X(Block)                      \
  X(LetStmt)                    \
  X(Evaluate)

enum class NodeKind : uint8_t {
#define CUTUNE_IR_ENUM(name) name,
  CUTUNE_IR_EXPR_NODES(CUTUNE_IR_ENUM) CUTUNE_IR_STMT_NODES(CUTUNE_IR_ENUM)
#undef CUTUNE_IR_ENUM
};

const char* node_kind_name(NodeKind kind);

struct Node {
  explicit Node(NodeKind k) : kind(k) {}
  virtual ~Node() = default;
  const NodeKind kind;
};

struct ExprNode : Node {
  ExprNode(NodeKind k, Type t) : Node(k), type(t) {}
  const Type type;
};

struct StmtNode : Node {
  using Node::Node;
};

// A handle to an immutable node. `as<T>()` downcasts by the kind tag (nullptr on mismatch).
template <typename NodeT>
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_ptr<const NodeT> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const NodeT* get() const { return node_.get(); }
  const NodeT* operator->() const { return node_.get(); }
  NodeKind kind() const { return node_->kind; }
  bool same_as(const Handle& other) const { return node_ == other.node_; }

  template <typename T>
  const T* as() const {
    return (node_ && node_->kind == T::kKind) ? static_cast<const T*>(node_.get()) : nullptr;
  }

 protected:
  std::shared_ptr<const NodeT> node_;
};

class Expr : public Handle<ExprNode> {
 public:
  using Handle::Handle;
  // Integer and float literals convert implicitly so templates read like maths: `i * 4 + 1`.
  Expr(int value);      // NOLINT(google-explicit-constructor)
  Expr(int64_t value);  // NOLINT(google-explicit-constructor)
  Expr(float value);    // NOLINT(google-explicit-constructor)
  Type type() const { return node_->type; }
};

class Stmt : public Handle<StmtNode> {
 public:
  using Handle::Handle;
};

// Where a buffer lives.
enum class MemoryScope : uint8_t {
  global,  // a kernel parameter in device memory
  shared,  // __shared__: one copy per thread block
  local    // per-thread array (registers, or local memory if the compiler spills)
};
const char* scope_name(MemoryScope scope);

// A named flat array. Global buffers are kernel parameters; shared and local ones are
// introduced by an Allocate. `elements` is the static size.
struct BufferNode {
  std::string name;
  Type type;  // element type (lanes == 1)
  MemoryScope scope;
  int64_t elements;
  bool read_only;  // global: the kernel never stores to it (emitted as const)
};
class Buffer {
 public:
  Buffer() = default;
  static Buffer make(std::string name, Type type, MemoryScope scope, int64_t elements,
                     bool read_only = false);
  const BufferNode* operator->() const { return node_.get(); }
  const BufferNode* get() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  bool same_as(const Buffer& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<const BufferNode> node_;
};

// ---- Expressions ----

struct IntImm : ExprNode {
  static constexpr NodeKind kKind = NodeKind::IntImm;
  IntImm(Type t, int64_t v) : ExprNode(kKind, t), value(v) {}
  const int64_t value;
  static Expr make(Type t, int64_t value);
};

struct FloatImm : ExprNode {
  static constexpr NodeKind kKind = NodeKind::FloatImm;
  FloatImm(Type t, double v) : ExprNode(kKind, t), value(v) {}
  const double value;
  static Expr make(Type t, double value);
};

// A named scalar: a loop variable, a let-bound value or a scalar kernel parameter.
struct Var : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Var;
  Var(Type t, std::string n) : ExprNode(kKind, t), name(std::move(n)) {}
  const std::string name;
  static Expr make(Type t, std::string name);
};

// Binary arithmetic, comparison and logic nodes share one shape. Operands have the same type
// (lanes 1); comparisons and logic yield Bool.
template <NodeKind K>
struct BinaryNode : ExprNode {
  static constexpr NodeKind kKind = K;
  BinaryNode(Type t, Expr x, Expr y) : ExprNode(K, t), a(std::move(x)), b(std::move(y)) {}
  const Expr a, b;
  static Expr make(Expr a, Expr b);
};
using Add = BinaryNode<NodeKind::Add>;
using Sub = BinaryNode<NodeKind::Sub>;
using Mul = BinaryNode<NodeKind::Mul>;
using Div = BinaryNode<NodeKind::Div>;  // floor division for integers
using Mod = BinaryNode<NodeKind::Mod>;  // floor modulo for integers
using Min = BinaryNode<NodeKind::Min>;
using Max = BinaryNode<NodeKind::Max>;
using EQ = BinaryNode<NodeKind::EQ>;
using NE = BinaryNode<NodeKind::NE>;
using LT = BinaryNode<NodeKind::LT>;
using LE = BinaryNode<NodeKind::LE>;
using GT = BinaryNode<NodeKind::GT>;
using GE = BinaryNode<NodeKind::GE>;
using And = BinaryNode<NodeKind::And>;
using Or = BinaryNode<NodeKind::Or>;

struct Not : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Not;
  Not(Expr x) : ExprNode(kKind, Type::boolean()), a(std::move(x)) {}
  const Expr a;
  static Expr make(Expr a);
};

// condition ? true_value : false_value (both evaluated is allowed; no side effects in the IR).
struct Select : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Select;
  Select(Type t, Expr c, Expr tv, Expr fv)
      : ExprNode(kKind, t),
        condition(std::move(c)),
        true_value(std::move(tv)),
        false_value(std::move(fv)) {}
  const Expr condition, true_value, false_value;
  static Expr make(Expr condition, Expr true_value, Expr false_value);
};

// Reads `lanes` consecutive elements of `buffer` starting at `index` (an Int32 expression).
// The result type has the buffer's element type and `lanes` lanes.
struct Load : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Load;
  Load(Type t, Buffer b, Expr i) : ExprNode(kKind, t), buffer(std::move(b)), index(std::move(i)) {}
  const Buffer buffer;
  const Expr index;
  int lanes() const { return type.lanes; }
  static Expr make(Buffer buffer, Expr index, int lanes = 1);
};

struct Cast : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Cast;
  Cast(Type t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  const Expr value;
  static Expr make(Type t, Expr value);
};

// A call of a named device intrinsic or math function (e.g. "fmaf", "expf"). Pure unless it is
// the value of an Evaluate statement.
//
// One name is special: `address_of` (kAddressOf) takes a single scalar Load and means the
// address of the element it names, printed `&buf[index]`; its type is the element's type (the
// IR has no pointer types). It appears only as an argument of an intrinsic that reads or writes
// through a pointer (cp.async, ldmatrix, mma fragments, atomicAdd); see src/ir/intrinsics.h.
inline constexpr const char* kAddressOf = "address_of";
struct Call : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Call;
  Call(Type t, std::string n, std::vector<Expr> as)
      : ExprNode(kKind, t), name(std::move(n)), args(std::move(as)) {}
  const std::string name;
  const std::vector<Expr> args;
  static Expr make(Type t, std::string name, std::vector<Expr> args);
};

// ---- Statements ----

enum class ForKind : uint8_t {
  serial,
  unrolled,    // fully unrolled (`#pragma unroll`); extent must be a constant
  vectorized,  // a hint that the body maps to one vector access; emitted unrolled
  block_x,
  block_y,
  block_z,
  thread_x,
  thread_y,
  thread_z
};
// "serial", "unrolled", "vectorized"; a bound kind names its CUDA index ("blockIdx.x", ...).
const char* for_kind_name(ForKind kind);
inline bool is_block_binding(ForKind k) {
  return k == ForKind::block_x || k == ForKind::block_y || k == ForKind::block_z;
}
inline bool is_thread_binding(ForKind k) {
  return k == ForKind::thread_x || k == ForKind::thread_y || k == ForKind::thread_z;
}
inline bool is_bound(ForKind k) { return is_block_binding(k) || is_thread_binding(k); }

// A loop over var in [min, min + extent). A bound loop (block/thread) emits no loop: the
// variable is the hardware index, min must be 0 and the extent is the launch dimension.
struct For : StmtNode {
  static constexpr NodeKind kKind = NodeKind::For;
  For(std::string v, Expr mn, Expr ext, ForKind k, Stmt b)
      : StmtNode(kKind),
        var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        kind(k),
        body(std::move(b)) {}
  const std::string var;  // an Int32 variable
  const Expr min, extent;
  const ForKind kind;
  const Stmt body;
  Expr var_expr() const;
  static Stmt make(std::string var, Expr min, Expr extent, ForKind kind, Stmt body);
};

// Introduces a shared or local buffer, visible in `body`. Global buffers are not allocated.
struct Allocate : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Allocate;
  Allocate(Buffer b, Stmt bd) : StmtNode(kKind), buffer(std::move(b)), body(std::move(bd)) {}
  const Buffer buffer;
  const Stmt body;
  static Stmt make(Buffer buffer, Stmt body);
};

// Writes value (with value.type().lanes lanes) to buffer[index ...].
struct Store : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Store;
  Store(Buffer b, Expr i, Expr v)
      : StmtNode(kKind), buffer(std::move(b)), index(std::move(i)), value(std::move(v)) {}
  const Buffer buffer;
  const Expr index, value;
  int lanes() const { return value.type().lanes; }
  static Stmt make(Buffer buffer, Expr index, Expr value);
};

// A barrier for all threads of the block (__syncthreads).
struct Sync : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Sync;
  Sync() : StmtNode(kKind) {}
  static Stmt make();
};

struct IfThenElse : StmtNode {
  static constexpr NodeKind kKind = NodeKind::IfThenElse;
  IfThenElse(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind),
        condition(std::move(c)),
        then_case(std::move(t)),
        else_case(std::move(e)) {}
  const Expr condition;
  const Stmt then_case;
  const Stmt else_case;  // may be undefined
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
};

// A sequence of statements.
struct Block : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Block;
  explicit Block(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
  const std::vector<Stmt> stmts;
  // Flattens nested blocks and drops undefined statements; one statement is returned as is.
  static Stmt make(std::vector<Stmt> stmts);
};

// Binds an immutable Int32/Float32 name to a value within body (emitted as `const int x = ...;`).
struct LetStmt : StmtNode {
  static constexpr NodeKind kKind = NodeKind::LetStmt;
  LetStmt(std::string v, Expr val, Stmt b)
      : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const std::string var;
  const Expr value;
  const Stmt body;
  Expr var_expr() const;
  static Stmt make(std::string var, Expr value, Stmt body);
};

// Evaluates an expression for its side effects (an intrinsic call).
struct Evaluate : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Evaluate;
  explicit Evaluate(Expr v) : StmtNode(kKind), value(std::move(v)) {}
  const Expr value;
  static Stmt make(Expr value);
};

// ---- Kernels ----

// One __global__ function: its parameters in order (global buffers, then scalar variables)
// and its body. The launch grid and block come from the bound loops in the body.
struct Kernel {
  std::string name;
  std::vector<Buffer> buffers;  // global buffers, in parameter order
  std::vector<Expr> scalars;    // Var expressions passed by value after the buffers
  Stmt body;
  // Blocks per SM the compiler must leave room for (registers capped to fit them), emitted as
  // __launch_bounds__(threads, min_blocks); 0: no such promise.
  int min_blocks = 0;
  // TMA tensor maps, passed after the scalars (src/ir/tensor_map.h); the body names each by a
  // Var of its name. Last, so that Kernel{name, buffers, scalars, body} still reads.
  std::vector<TensorMapParam> tensor_maps = {};
  // A persistent kernel (> 0): its blocks walk their work by gridDim.x, so it is correct for
  // any grid.x from 1 to the block_x extent (the most blocks it can use), and whoever launches
  // it takes min(that extent, SMs x this) blocks (src/codegen/launch_grid.h): the blocks of it
  // one SM holds at once. 0: the grid is the block loops' extents.
  int persistent_blocks_per_sm = 0;
  // Thread-block clusters (sm_90): the blocks along x come in groups of `cluster_x`
  // consecutive blocks that are co-scheduled and share their shared memory (multicast TMA,
  // remote mbarrier arrivals; src/ir/tma_intrinsics.h). Emitted as __cluster_dims__, so any
  // launch makes the clusters; the launched grid.x is a multiple of it (launch_grid.h).
  // 1: no clusters.
  int cluster_x = 1;
};

// Thrown by make(...) when an IR invariant is broken: a bug in the template that built it.
class IRError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Integer value of a constant expression, if it is one.
std::optional<int64_t> as_const_int(const Expr& e);
bool is_const_int(const Expr& e, int64_t value);

}  // namespace cutune::ir
