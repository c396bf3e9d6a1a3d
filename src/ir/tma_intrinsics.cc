#include "src/ir/tma_intrinsics.h"

#include <algorithm>

#include "src/ir/ir_operators.h"

namespace cutune::ir {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw IRError(what);
}

Stmt call(const std::string& name, std::vector<Expr> args) {
  return Evaluate::make(Call::make(Type::i32(), name, std::move(args)));
}

// address_of(buffer, index) of a shared buffer, of element type `type` unless undefined.
bool is_shared_address(const Expr& e, std::optional<Type> type) {
  const Call* c = e.as<Call>();
  if (c == nullptr || c->name != kAddressOf || c->args.size() != 1) return false;
  const Load* l = c->args[0].as<Load>();
  return l != nullptr && l->buffer->scope == MemoryScope::shared &&
         (!type || l->buffer->type == *type);
}

void require_barrier(const Expr& bar, const char* who) {
  require(is_shared_address(bar, Type::i64()),
          std::string(who) + ": the barrier is address_of a shared Int64 buffer");
}

void require_int(const Expr& e, const char* who, const char* what) {
  require(e.type() == Type::i32(), std::string(who) + ": " + what + " is Int32");
}

bool is_map(const Expr& e) {
  const Var* v = e.as<Var>();
  return v != nullptr && v->type == Type::i64();
}

}  // namespace

Expr tensor_map_ref(const std::string& name) { return Var::make(Type::i64(), name); }

Stmt mbarrier_init(const Expr& bar, const Expr& count) {
  require_barrier(bar, "mbarrier_init");
  require_int(count, "mbarrier_init", "count");
  if (auto c = as_const_int(count)) {
    require(*c >= 1 && *c < (1 << 20), "mbarrier_init: count must be in 1..2^20-1");
  }
  return call("cutune_mbarrier_init", {bar, count});
}

Stmt mbarrier_arrive(const Expr& bar) {
  require_barrier(bar, "mbarrier_arrive");
  return call("cutune_mbarrier_arrive", {bar});
}

Stmt mbarrier_arrive_expect_tx(const Expr& bar, const Expr& bytes) {
  require_barrier(bar, "mbarrier_arrive_expect_tx");
  require_int(bytes, "mbarrier_arrive_expect_tx", "bytes");
  return call("cutune_mbarrier_arrive_expect_tx", {bar, bytes});
}

Stmt mbarrier_expect_tx(const Expr& bar, const Expr& bytes) {
  require_barrier(bar, "mbarrier_expect_tx");
  require_int(bytes, "mbarrier_expect_tx", "bytes");
  return call("cutune_mbarrier_expect_tx", {bar, bytes});
}

Stmt mbarrier_wait_parity(const Expr& bar, const Expr& parity) {
  require_barrier(bar, "mbarrier_wait_parity");
  require_int(parity, "mbarrier_wait_parity", "parity");
  return call("cutune_mbarrier_wait_parity", {bar, parity});
}

Expr mbarrier_test_wait_parity(const Expr& bar, const Expr& parity) {
  require_barrier(bar, "mbarrier_test_wait_parity");
  require_int(parity, "mbarrier_test_wait_parity", "parity");
  return Call::make(Type::boolean(), "cutune_mbarrier_test_wait_parity", {bar, parity});
}

Stmt mbarrier_inval(const Expr& bar) {
  require_barrier(bar, "mbarrier_inval");
  return call("cutune_mbarrier_inval", {bar});
}

Stmt tma_load_2d(const Expr& dst, const Expr& map, const Expr& bar, const Expr& c0,
                 const Expr& c1) {
  require(is_shared_address(dst, std::nullopt), "tma_load_2d: dst is address_of a shared buffer");
  require(is_map(map), "tma_load_2d: map is a tensor_map_ref");
  require_barrier(bar, "tma_load_2d");
  require_int(c0, "tma_load_2d", "c0");
  require_int(c1, "tma_load_2d", "c1");
  return call("cutune_tma_load_2d", {dst, map, bar, c0, c1});
}

Stmt fence_proxy_async() { return call("cutune_fence_proxy_async", {}); }

Stmt prefetch_tensormap(const Expr& map) {
  require(is_map(map), "prefetch_tensormap: map is a tensor_map_ref");
  return call("cutune_prefetch_tensormap", {map});
}

Stmt tma_store_2d(const Expr& map, const Expr& src, const Expr& c0, const Expr& c1) {
  require(is_map(map), "tma_store_2d: map is a tensor_map_ref");
  require(is_shared_address(src, std::nullopt), "tma_store_2d: src is address_of a shared buffer");
  require_int(c0, "tma_store_2d", "c0");
  require_int(c1, "tma_store_2d", "c1");
  return call("cutune_tma_store_2d", {map, src, c0, c1});
}

Stmt bulk_commit_group() { return call("cutune_bulk_commit_group", {}); }
Stmt bulk_wait_group_read(int pending) {
  require(pending == 0 || pending == 1, "bulk_wait_group_read: pending is 0 or 1");
  return call(pending == 0 ? "cutune_bulk_wait_group_read_0" : "cutune_bulk_wait_group_read_1",
              {});
}
Stmt bulk_wait_group() { return call("cutune_bulk_wait_group", {}); }

Stmt named_barrier_sync(const Expr& id, int count) {
  require_int(id, "named_barrier_sync", "id");
  if (auto c = as_const_int(id)) {
    require(*c >= 1 && *c <= 15, "named_barrier_sync: id must be in 1..15 (0 is __syncthreads')");
  }
  require(count >= 32 && count % 32 == 0 && count <= 1024,
          "named_barrier_sync: count must be a multiple of 32 in 32..1024");
  return call("cutune_named_barrier_sync", {id, i32(count)});
}

Stmt stmatrix_x4(const Expr& row, const std::vector<Expr>& r) {
  const Call* c = row.as<Call>();
  const Load* l = c != nullptr && c->args.size() == 1 ? c->args[0].as<Load>() : nullptr;
  require(
      is_shared_address(row, std::nullopt) && l != nullptr && l->buffer->type.element_bytes() == 2,
      "stmatrix_x4: row is address_of a shared 16-bit buffer");
  require(r.size() == 4, "stmatrix_x4: four registers");
  std::vector<Expr> args{row};
  for (const Expr& e : r) {
    // pack_x2's two-lane 16-bit value is one 32-bit word too.
    const bool word =
        e.type() == Type::u32() || (e.type().lanes == 2 && e.type().element_bytes() == 2);
    require(word, "stmatrix_x4: the registers are 32-bit words (UInt32 or pack_x2)");
    args.push_back(e);
  }
  return call("cutune_stmatrix_x4", std::move(args));
}

Expr cluster_ctarank() { return Call::make(Type::i32(), "cutune_cluster_ctarank", {}); }
Stmt cluster_arrive() { return call("cutune_cluster_arrive", {}); }
Stmt cluster_wait() { return call("cutune_cluster_wait", {}); }
Stmt fence_mbarrier_init() { return call("cutune_fence_mbarrier_init", {}); }

Stmt mbarrier_arrive_cluster(const Expr& bar, const Expr& cta) {
  require_barrier(bar, "mbarrier_arrive_cluster");
  require_int(cta, "mbarrier_arrive_cluster", "cta");
  return call("cutune_mbarrier_arrive_cluster", {bar, cta});
}

Stmt tma_load_2d_multicast(const Expr& dst, const Expr& map, const Expr& bar, const Expr& c0,
                           const Expr& c1, const Expr& mask) {
  require(is_shared_address(dst, std::nullopt),
          "tma_load_2d_multicast: dst is address_of a shared buffer");
  require(is_map(map), "tma_load_2d_multicast: map is a tensor_map_ref");
  require_barrier(bar, "tma_load_2d_multicast");
  require_int(c0, "tma_load_2d_multicast", "c0");
  require_int(c1, "tma_load_2d_multicast", "c1");
  require_int(mask, "tma_load_2d_multicast", "mask");
  if (auto m = as_const_int(mask)) {
    require(*m >= 1 && *m <= 0xffff, "tma_load_2d_multicast: mask must be in 1..0xffff");
  }
  return call("cutune_tma_load_2d_multicast", {dst, map, bar, c0, c1, mask});
}

Expr elect_one() { return Call::make(Type::boolean(), kElectOne, {}); }

const std::vector<std::string>& tma_intrinsic_names() {
  static const std::vector<std::string> names = {"cutune_mbarrier_init",
                                                 "cutune_mbarrier_arrive",
                                                 "cutune_mbarrier_arrive_expect_tx",
                                                 "cutune_mbarrier_expect_tx",
                                                 "cutune_mbarrier_wait_parity",
                                                 "cutune_mbarrier_test_wait_parity",
                                                 "cutune_mbarrier_inval",
                                                 "cutune_tma_load_2d",
                                                 "cutune_fence_proxy_async",
                                                 "cutune_prefetch_tensormap",
                                                 kElectOne,
                                                 "cutune_tma_store_2d",
                                                 "cutune_bulk_commit_group",
                                                 "cutune_bulk_wait_group_read_0",
                                                 "cutune_bulk_wait_group_read_1",
                                                 "cutune_bulk_wait_group",
                                                 "cutune_named_barrier_sync",
                                                 "cutune_stmatrix_x4",
                                                 "cutune_cluster_ctarank",
                                                 "cutune_cluster_arrive",
                                                 "cutune_cluster_wait",
                                                 "cutune_fence_mbarrier_init",
                                                 "cutune_mbarrier_arrive_cluster",
                                                 "cutune_tma_load_2d_multicast"};
  return names;
}

bool is_tma_intrinsic(const std::string& name) {
  const std::vector<std::string>& names = tma_intrinsic_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace cutune::ir
