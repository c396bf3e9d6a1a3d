#include "src/ir/ir.h"

#include <mutex>
#include <new>
#include <vector>

#include <fmt/format.h>

namespace cutune::ir {

namespace {

// Node memory. A template's build makes a few hundred small nodes and drops them soon after
// (feature extraction builds a kernel per configuration: tens of thousands a tuning round),
// so every node comes from per-thread free lists of fixed-size blocks instead of malloc.
// Blocks are carved from 64 KiB chunks that are never returned (a block freed on another
// thread joins that thread's lists); a thread's lists pass to a shared one when it ends, and
// a thread out of blocks takes the shared list before carving a chunk. Memory held is thus
// the peak of live nodes, not their churn.
constexpr size_t kGranule = 16;
constexpr size_t kClasses = 16;  // blocks of 16, 32, ..., 256 bytes; larger nodes use new
constexpr size_t kChunkBytes = 64 * 1024;

struct FreeBlock {
  FreeBlock* next;
};

struct SharedLists {
  std::mutex mutex;
  FreeBlock* free[kClasses] = {};
  std::vector<void*> chunks;  // kept reachable: never freed
};

SharedLists& shared_lists() {
  static SharedLists* lists = new SharedLists;  // never destroyed: nodes may outlive statics
  return *lists;
}

// Trivially destructible, so that it stays usable while other thread-locals are destroyed.
struct ThreadLists {
  FreeBlock* free[kClasses];
  bool closed;  // the thread is ending: frees go to the shared lists
};
thread_local ThreadLists thread_lists{};

// Hands the thread's blocks to the shared lists when the thread ends.
struct ThreadListsReturn {
  ~ThreadListsReturn() {
    SharedLists& shared = shared_lists();
    std::lock_guard<std::mutex> lock(shared.mutex);
    for (size_t c = 0; c < kClasses; ++c) {
      while (FreeBlock* b = thread_lists.free[c]) {
        thread_lists.free[c] = b->next;
        b->next = shared.free[c];
        shared.free[c] = b;
      }
    }
    thread_lists.closed = true;
  }
};
thread_local ThreadListsReturn thread_lists_return;

void refill(size_t c) {
  (void)&thread_lists_return;  // constructed in each thread that allocates nodes
  SharedLists& shared = shared_lists();
  std::lock_guard<std::mutex> lock(shared.mutex);
  if (shared.free[c] != nullptr) {
    thread_lists.free[c] = std::exchange(shared.free[c], nullptr);
    return;
  }
  const size_t size = (c + 1) * kGranule;
  char* chunk = static_cast<char*>(::operator new(kChunkBytes));
  shared.chunks.push_back(chunk);
  FreeBlock* head = thread_lists.free[c];
  for (size_t off = 0; off + size <= kChunkBytes; off += size) {
    auto* b = reinterpret_cast<FreeBlock*>(chunk + off);
    b->next = head;
    head = b;
  }
  thread_lists.free[c] = head;
}

void* node_allocate(size_t bytes) {
  if (bytes == 0 || bytes > kGranule * kClasses) return ::operator new(bytes);
  const size_t c = (bytes - 1) / kGranule;
  if (thread_lists.closed) {
    SharedLists& shared = shared_lists();
    std::lock_guard<std::mutex> lock(shared.mutex);
    if (FreeBlock* b = shared.free[c]) {
      shared.free[c] = b->next;
      return b;
    }
    return ::operator new(bytes);  // rare: at thread exit; never pooled again (see free)
  }
  if (thread_lists.free[c] == nullptr) refill(c);
  FreeBlock* b = thread_lists.free[c];
  thread_lists.free[c] = b->next;
  return b;
}

void node_free(void* p, size_t bytes) {
  if (bytes == 0 || bytes > kGranule * kClasses) {
    ::operator delete(p);
    return;
  }
  const size_t c = (bytes - 1) / kGranule;
  auto* b = static_cast<FreeBlock*>(p);
  if (thread_lists.closed) {
    SharedLists& shared = shared_lists();
    std::lock_guard<std::mutex> lock(shared.mutex);
    b->next = shared.free[c];
    shared.free[c] = b;
    return;
  }
  (void)&thread_lists_return;  // a thread that only frees nodes hands them back too
  b->next = thread_lists.free[c];
  thread_lists.free[c] = b;
}

// The allocator std::allocate_shared rebinds to its node-plus-count block.
template <typename T>
struct NodeAllocator {
  using value_type = T;
  NodeAllocator() = default;
  template <typename U>
  NodeAllocator(const NodeAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    static_assert(alignof(T) <= kGranule, "node alignment above the pool's");
    return static_cast<T*>(node_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { node_free(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const NodeAllocator<U>&) const {
    return true;
  }
};

template <typename T, typename... Args>
std::shared_ptr<const T> make_node(Args&&... args) {
  return std::allocate_shared<const T>(NodeAllocator<T>(), std::forward<Args>(args)...);
}

// The detail is a view: building a node must not pay for a message it will not print.
void check(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) throw IRError(detail.empty() ? std::string(what) : fmt::format("{}: {}", what, detail));
}
// A C string's length is taken only for a failure (node kind names, on every binary node).
void check(bool ok, const char* what, const char* detail) {
  if (!ok) check(false, what, std::string_view(detail));
}

constexpr bool is_comparison(NodeKind k) {
  return k == NodeKind::EQ || k == NodeKind::NE || k == NodeKind::LT || k == NodeKind::LE ||
         k == NodeKind::GT || k == NodeKind::GE;
}

}  // namespace

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
#define CUTUNE_IR_NAME(name) \
  case NodeKind::name:       \
    return #name;
    CUTUNE_IR_EXPR_NODES(CUTUNE_IR_NAME)
    CUTUNE_IR_STMT_NODES(CUTUNE_IR_NAME)
#undef CUTUNE_IR_NAME
  }
  return "?";
}

const char* scope_name(MemoryScope scope) {
  switch (scope) {
    case MemoryScope::global:
      return "global";
    case MemoryScope::shared:
      return "shared";
    case MemoryScope::local:
      return "local";
  }
  return "?";
}

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::serial:
      return "serial";
    case ForKind::unrolled:
      return "unrolled";
    case ForKind::vectorized:
      return "vectorized";
    case ForKind::block_x:
      return "blockIdx.x";
    case ForKind::block_y:
      return "blockIdx.y";
    case ForKind::block_z:
      return "blockIdx.z";
    case ForKind::thread_x:
      return "threadIdx.x";
    case ForKind::thread_y:
      return "threadIdx.y";
    case ForKind::thread_z:
      return "threadIdx.z";
  }
  return "?";
}

std::string dtype_name(DType d) {
  switch (d) {
    case DType::Bool:
      return "bool";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Float32:
      return "float32";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::UInt32:
      return "uint32";
  }
  return "unknown";
}

std::string cuda_type_name(Type t) {
  std::string base;
  switch (t.dtype) {
    case DType::Bool:
      base = "bool";
      break;
    case DType::Int32:
      base = "int";
      break;
    case DType::Int64:
      base = "long long";
      break;
    case DType::Float32:
      base = "float";
      break;
    case DType::Float16:
      base = "cutune_half";
      break;
    case DType::BFloat16:
      base = "cutune_bf16";
      break;
    case DType::UInt32:
      base = "unsigned";
      break;
  }
  if (t.lanes == 1) return base;
  if (t.dtype == DType::Float32) return fmt::format("float{}", t.lanes);
  if (t.dtype == DType::Int32) return fmt::format("int{}", t.lanes);
  // A pair of 16-bit storage values travels as one 32-bit word.
  if (t.element_bytes() == 2 && t.lanes == 2) return "unsigned";
  throw IRError(fmt::format("no CUDA type for {} with {} lanes", base, t.lanes));
}

Buffer Buffer::make(std::string name, Type type, MemoryScope scope, int64_t elements,
                    bool read_only) {
  check(!name.empty(), "Buffer needs a name");
  check(type.lanes == 1, "Buffer element type must be scalar", name);
  check(elements > 0, "Buffer needs a positive size", name);
  Buffer b;
  b.node_ = make_node<BufferNode>(BufferNode{std::move(name), type, scope, elements, read_only});
  return b;
}

Expr::Expr(int value) : Expr(IntImm::make(Type::i32(), value)) {}
Expr::Expr(int64_t value) : Expr(IntImm::make(Type::i32(), value)) {}
Expr::Expr(float value) : Expr(FloatImm::make(Type::f32(), value)) {}

Expr IntImm::make(Type t, int64_t value) {
  check(t.is_int() || t.is_bool(), "IntImm needs an integer type");
  if (t.dtype == DType::Int32) {
    if (value < INT32_MIN || value > INT32_MAX) {
      check(false, "IntImm out of Int32 range", std::to_string(value));
    }
  }
  return Expr(make_node<IntImm>(t, value));
}

Expr FloatImm::make(Type t, double value) {
  check(t.is_float() && !t.is_storage_only() && t.lanes == 1, "FloatImm needs a scalar float type");
  return Expr(make_node<FloatImm>(t, value));
}

Expr Var::make(Type t, std::string name) {
  check(!name.empty(), "Var needs a name");
  check(t.lanes == 1, "Var must be scalar", name);
  return Expr(make_node<Var>(t, std::move(name)));
}

template <NodeKind K>
Expr BinaryNode<K>::make(Expr a, Expr b) {
  check(a.defined() && b.defined(), "binary node with an undefined operand", node_kind_name(K));
  check(a.type() == b.type(), "binary node operands differ in type", node_kind_name(K));
  Type t = a.type();
  check(!t.is_storage_only(), "no arithmetic or comparison on a storage-only type (convert first)",
        node_kind_name(K));
  if constexpr (K == NodeKind::And || K == NodeKind::Or) {
    check(t.is_bool(), "logical operands must be Bool", node_kind_name(K));
  } else if constexpr (is_comparison(K)) {
    t = Type::boolean();
  } else {
    check(!t.is_bool(), "arithmetic on Bool", node_kind_name(K));
    check(t.lanes == 1, "arithmetic is scalar", node_kind_name(K));
  }
  return Expr(make_node<BinaryNode<K>>(t, std::move(a), std::move(b)));
}

#define CUTUNE_IR_INSTANTIATE(name) template struct BinaryNode<NodeKind::name>;
CUTUNE_IR_BINARY_NODES(CUTUNE_IR_INSTANTIATE)
#undef CUTUNE_IR_INSTANTIATE

Expr Not::make(Expr a) {
  check(a.defined() && a.type().is_bool(), "Not needs a Bool operand");
  return Expr(make_node<Not>(std::move(a)));
}

Expr Select::make(Expr c, Expr t, Expr f) {
  check(c.defined() && c.type().is_bool(), "Select condition must be Bool");
  check(t.defined() && f.defined() && t.type() == f.type(), "Select branches differ in type");
  Type ty = t.type();
  return Expr(make_node<Select>(ty, std::move(c), std::move(t), std::move(f)));
}

Expr Load::make(Buffer buffer, Expr index, int lanes) {
  check(buffer.defined(), "Load of an undefined buffer");
  check(index.defined() && index.type() == Type::i32(), "Load index must be Int32", buffer->name);
  check(lanes == 1 || lanes == 2 || lanes == 4, "Load lanes must be 1, 2 or 4", buffer->name);
  if (auto i = as_const_int(index)) {
    if (*i < 0 || *i + lanes > buffer->elements) {
      check(false, "constant Load index out of bounds", fmt::format("{}[{}]", buffer->name, *i));
    }
  }
  Type t = buffer->type.with_lanes(lanes);
  return Expr(make_node<Load>(t, std::move(buffer), std::move(index)));
}

Expr Cast::make(Type t, Expr value) {
  check(value.defined(), "Cast of an undefined value");
  check(t.lanes == value.type().lanes, "Cast cannot change lanes");
  check(!t.is_storage_only() && !value.type().is_storage_only(),
        "Cast to or from a storage-only type: use a conversion intrinsic");
  if (t == value.type()) return value;
  return Expr(make_node<Cast>(t, std::move(value)));
}

Expr Call::make(Type t, std::string name, std::vector<Expr> args) {
  check(!name.empty(), "Call needs a name");
  for (const Expr& a : args) check(a.defined(), "Call with an undefined argument", name);
  if (name == kAddressOf) {
    check(args.size() == 1 && args[0].as<Load>() && args[0].type().lanes == 1,
          "address_of takes one scalar Load");
    check(t == args[0].type(), "address_of has the type of the element it points to");
  }
  return Expr(make_node<Call>(t, std::move(name), std::move(args)));
}

Expr For::var_expr() const { return Var::make(Type::i32(), var); }

Stmt For::make(std::string var, Expr min, Expr extent, ForKind kind, Stmt body) {
  check(!var.empty(), "For needs a variable name");
  check(min.defined() && min.type() == Type::i32(), "For min must be Int32", var);
  check(extent.defined() && extent.type() == Type::i32(), "For extent must be Int32", var);
  check(body.defined(), "For needs a body", var);
  if (is_bound(kind)) {
    check(is_const_int(min, 0), "a bound loop starts at 0", var);
    auto e = as_const_int(extent);
    check(e && *e > 0, "a bound loop has a positive constant extent", var);
  }
  if (kind == ForKind::unrolled || kind == ForKind::vectorized) {
    check(as_const_int(extent).has_value(), "an unrolled loop has a constant extent", var);
  }
  return Stmt(
      make_node<For>(std::move(var), std::move(min), std::move(extent), kind, std::move(body)));
}

Stmt Allocate::make(Buffer buffer, Stmt body) {
  check(buffer.defined(), "Allocate of an undefined buffer");
  check(buffer->scope != MemoryScope::global, "global buffers are parameters, not allocations",
        buffer->name);
  check(body.defined(), "Allocate needs a body", buffer->name);
  return Stmt(make_node<Allocate>(std::move(buffer), std::move(body)));
}

Stmt Store::make(Buffer buffer, Expr index, Expr value) {
  check(buffer.defined(), "Store to an undefined buffer");
  check(!(buffer->scope == MemoryScope::global && buffer->read_only), "Store to a read-only buffer",
        buffer->name);
  check(index.defined() && index.type() == Type::i32(), "Store index must be Int32", buffer->name);
  check(value.defined(), "Store of an undefined value", buffer->name);
  check(value.type().element() == buffer->type, "Store value type differs from the buffer's",
        buffer->name);
  int lanes = value.type().lanes;
  check(lanes == 1 || lanes == 2 || lanes == 4, "Store lanes must be 1, 2 or 4", buffer->name);
  if (auto i = as_const_int(index)) {
    if (*i < 0 || *i + lanes > buffer->elements) {
      check(false, "constant Store index out of bounds", fmt::format("{}[{}]", buffer->name, *i));
    }
  }
  return Stmt(make_node<Store>(std::move(buffer), std::move(index), std::move(value)));
}

Stmt Sync::make() { return Stmt(make_node<Sync>()); }

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
  check(condition.defined() && condition.type().is_bool(), "IfThenElse condition must be Bool");
  check(then_case.defined(), "IfThenElse needs a then case");
  return Stmt(
      make_node<IfThenElse>(std::move(condition), std::move(then_case), std::move(else_case)));
}

Stmt Block::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (const Block* b = s.as<Block>()) {
      flat.insert(flat.end(), b->stmts.begin(), b->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  check(!flat.empty(), "Block with no statements");
  if (flat.size() == 1) return flat.front();
  return Stmt(make_node<Block>(std::move(flat)));
}

Expr LetStmt::var_expr() const { return Var::make(value.type(), var); }

Stmt LetStmt::make(std::string var, Expr value, Stmt body) {
  check(!var.empty(), "LetStmt needs a name");
  check(value.defined() && value.type().lanes == 1, "LetStmt value must be a scalar", var);
  check(body.defined(), "LetStmt needs a body", var);
  return Stmt(make_node<LetStmt>(std::move(var), std::move(value), std::move(body)));
}

Stmt Evaluate::make(Expr value) {
  check(value.defined(), "Evaluate of an undefined value");
  return Stmt(make_node<Evaluate>(std::move(value)));
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  if (const IntImm* i = e.as<IntImm>()) return i->value;
  return std::nullopt;
}

bool is_const_int(const Expr& e, int64_t value) {
  auto v = as_const_int(e);
  return v && *v == value;
}

}  // namespace cutune::ir
