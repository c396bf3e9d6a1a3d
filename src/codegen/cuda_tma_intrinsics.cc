#include "src/codegen/cuda_tma_intrinsics.h"

#include <utility>
#include <vector>

namespace cutune {

namespace {

// Each barrier operation takes the barrier's shared-window address (a 32-bit register), as
// the .shared::cta forms want it. Arrivals return the barrier state, which nothing uses: it
// goes to a scoped register.
const std::vector<std::pair<std::string, std::string>>& definitions() {
  static const std::vector<std::pair<std::string, std::string>> defs = {
      {"cutune_mbarrier_init",
       "__device__ __forceinline__ void cutune_mbarrier_init(long long* bar, int count) {\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\" :: \"r\"(s), \"r\"(count) "
       ": \"memory\");\n"
       "}\n"},
      {"cutune_mbarrier_arrive",
       "__device__ __forceinline__ void cutune_mbarrier_arrive(long long* bar) {\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  asm volatile(\"{\\n .reg .b64 state;\\n mbarrier.arrive.shared::cta.b64 state, [%0];\\n"
       "}\\n\" :: \"r\"(s) : \"memory\");\n"
       "}\n"},
      {"cutune_mbarrier_arrive_expect_tx",
       "__device__ __forceinline__ void cutune_mbarrier_arrive_expect_tx(long long* bar, int "
       "bytes) {\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  asm volatile(\"{\\n .reg .b64 state;\\n mbarrier.arrive.expect_tx.shared::cta.b64 "
       "state, [%0], %1;\\n}\\n\" :: \"r\"(s), \"r\"(bytes) : \"memory\");\n"
       "}\n"},
      {"cutune_mbarrier_expect_tx",
       "__device__ __forceinline__ void cutune_mbarrier_expect_tx(long long* bar, int bytes) {\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  asm volatile(\"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\\n\" :: "
       "\"r\"(s), \"r\"(bytes) : \"memory\");\n"
       "}\n"},
      // try_wait suspends for a time the hardware chooses and may still return false: loop.
      {"cutune_mbarrier_wait_parity",
       "__device__ __forceinline__ void cutune_mbarrier_wait_parity(long long* bar, int parity) "
       "{\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  unsigned done;\n"
       "  do {\n"
       "    asm volatile(\"{\\n .reg .pred p;\\n mbarrier.try_wait.parity.shared::cta.b64 p, "
       "[%1], %2;\\n selp.u32 %0, 1, 0, p;\\n}\\n\" : \"=r\"(done) : \"r\"(s), \"r\"(parity) : "
       "\"memory\");\n"
       "  } while (done == 0);\n"
       "}\n"},
      {"cutune_mbarrier_test_wait_parity",
       "__device__ __forceinline__ bool cutune_mbarrier_test_wait_parity(long long* bar, int "
       "parity) {\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  unsigned done;\n"
       "  asm volatile(\"{\\n .reg .pred p;\\n mbarrier.test_wait.parity.shared::cta.b64 p, "
       "[%1], %2;\\n selp.u32 %0, 1, 0, p;\\n}\\n\" : \"=r\"(done) : \"r\"(s), \"r\"(parity) : "
       "\"memory\");\n"
       "  return done != 0;\n"
       "}\n"},
      {"cutune_mbarrier_inval",
       "__device__ __forceinline__ void cutune_mbarrier_inval(long long* bar) {\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  asm volatile(\"mbarrier.inval.shared::cta.b64 [%0];\\n\" :: \"r\"(s) : \"memory\");\n"
       "}\n"},
      // The tensor map is addressed generically: a __grid_constant__ parameter's address is
      // valid for the TMA unit.
      {"cutune_tma_load_2d",
       "__device__ __forceinline__ void cutune_tma_load_2d(void* dst, const cutune_tensor_map& "
       "map, long long* bar, int c0, int c1) {\n"
       "  unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));\n"
       "  unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::"
       "bytes [%0], [%1, {%3, %4}], [%2];\\n\" :: \"r\"(d), \"l\"(reinterpret_cast<unsigned "
       "long long>(&map)), \"r\"(b), \"r\"(c0), \"r\"(c1) : \"memory\");\n"
       "}\n"},
      {"cutune_fence_proxy_async",
       "__device__ __forceinline__ void cutune_fence_proxy_async() {\n"
       "  asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n"
       "}\n"},
      {"cutune_prefetch_tensormap",
       "__device__ __forceinline__ void cutune_prefetch_tensormap(const cutune_tensor_map& map) "
       "{\n"
       "  asm volatile(\"prefetch.tensormap [%0];\\n\" :: \"l\"(reinterpret_cast<unsigned long "
       "long>(&map)) : \"memory\");\n"
       "}\n"},
      // The store reads shared memory through the async proxy and writes global memory; its
      // group is the issuing thread's bulk async-group.
      {"cutune_tma_store_2d",
       "__device__ __forceinline__ void cutune_tma_store_2d(const cutune_tensor_map& map, const "
       "void* src, int c0, int c1) {\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(src));\n"
       "  asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], "
       "[%1];\\n\" :: \"l\"(reinterpret_cast<unsigned long long>(&map)), \"r\"(s), \"r\"(c0), "
       "\"r\"(c1) : \"memory\");\n"
       "}\n"},
      {"cutune_bulk_commit_group",
       "__device__ __forceinline__ void cutune_bulk_commit_group() {\n"
       "  asm volatile(\"cp.async.bulk.commit_group;\\n\" ::: \"memory\");\n"
       "}\n"},
      {"cutune_bulk_wait_group_read_0",
       "__device__ __forceinline__ void cutune_bulk_wait_group_read_0() {\n"
       "  asm volatile(\"cp.async.bulk.wait_group.read 0;\\n\" ::: \"memory\");\n"
       "}\n"},
      {"cutune_bulk_wait_group_read_1",
       "__device__ __forceinline__ void cutune_bulk_wait_group_read_1() {\n"
       "  asm volatile(\"cp.async.bulk.wait_group.read 1;\\n\" ::: \"memory\");\n"
       "}\n"},
      {"cutune_bulk_wait_group",
       "__device__ __forceinline__ void cutune_bulk_wait_group() {\n"
       "  asm volatile(\"cp.async.bulk.wait_group 0;\\n\" ::: \"memory\");\n"
       "}\n"},
      // bar.sync with a thread count: the threads of the count meet, the others go on.
      {"cutune_named_barrier_sync",
       "__device__ __forceinline__ void cutune_named_barrier_sync(int id, int count) {\n"
       "  asm volatile(\"bar.sync %0, %1;\\n\" :: \"r\"(id), \"r\"(count) : \"memory\");\n"
       "}\n"},
      {"cutune_stmatrix_x4",
       "__device__ __forceinline__ void cutune_stmatrix_x4(void* row, unsigned r0, unsigned r1, "
       "unsigned r2, unsigned r3) {\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row));\n"
       "  asm volatile(\"stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\\n\" "
       ":: \"r\"(s), \"r\"(r0), \"r\"(r1), \"r\"(r2), \"r\"(r3) : \"memory\");\n"
       "}\n"},
      // Clusters. The rank is a special register; the cluster barrier's arrive releases and
      // its wait acquires, so the shared writes before it (mbarrier inits) are seen after it.
      {"cutune_cluster_ctarank",
       "__device__ __forceinline__ int cutune_cluster_ctarank() {\n"
       "  unsigned r;\n"
       "  asm volatile(\"mov.u32 %0, %%cluster_ctarank;\\n\" : \"=r\"(r));\n"
       "  return static_cast<int>(r);\n"
       "}\n"},
      {"cutune_cluster_arrive",
       "__device__ __forceinline__ void cutune_cluster_arrive() {\n"
       "  asm volatile(\"barrier.cluster.arrive.release;\\n\" ::: \"memory\");\n"
       "}\n"},
      {"cutune_cluster_wait",
       "__device__ __forceinline__ void cutune_cluster_wait() {\n"
       "  asm volatile(\"barrier.cluster.wait.acquire;\\n\" ::: \"memory\");\n"
       "}\n"},
      {"cutune_fence_mbarrier_init",
       "__device__ __forceinline__ void cutune_fence_mbarrier_init() {\n"
       "  asm volatile(\"fence.mbarrier_init.release.cluster;\\n\" ::: \"memory\");\n"
       "}\n"},
      // mapa turns the barrier's own shared address into the peer block's in the cluster
      // window, which the .shared::cluster arrive takes. Its default semantics (release at
      // CTA scope, as CUTLASS's ClusterBarrier uses it): a .release.cluster arrive would add a
      // cluster-wide memory barrier to every slice of the consumers' loop, and what it orders
      // (the slot's reads by wgmmas that have completed) needs none.
      {"cutune_mbarrier_arrive_cluster",
       "__device__ __forceinline__ void cutune_mbarrier_arrive_cluster(long long* bar, int cta) "
       "{\n"
       "  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  asm volatile(\"{\\n .reg .b32 remote;\\n mapa.shared::cluster.u32 remote, %0, %1;\\n"
       " mbarrier.arrive.shared::cluster.b64 _, [remote];\\n}\\n\" :: "
       "\"r\"(s), \"r\"(cta) : \"memory\");\n"
       "}\n"},
      {"cutune_tma_load_2d_multicast",
       "__device__ __forceinline__ void cutune_tma_load_2d_multicast(void* dst, const "
       "cutune_tensor_map& map, long long* bar, int c0, int c1, int mask) {\n"
       "  unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));\n"
       "  unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));\n"
       "  unsigned short m = static_cast<unsigned short>(mask);\n"
       "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::"
       "bytes.multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;\\n\" :: \"r\"(d), "
       "\"l\"(reinterpret_cast<unsigned long long>(&map)), \"r\"(b), \"r\"(c0), \"r\"(c1), "
       "\"h\"(m) : \"memory\");\n"
       "}\n"},
      // One lane of the full warp; the predicate goes through a register to the bool.
      {"cutune_elect_one",
       "__device__ __forceinline__ bool cutune_elect_one() {\n"
       "  unsigned elected;\n"
       "  asm volatile(\"{\\n .reg .pred p;\\n elect.sync _|p, 0xffffffff;\\n selp.u32 %0, 1, 0, "
       "p;\\n}\\n\" : \"=r\"(elected));\n"
       "  return elected != 0;\n"
       "}\n"},
  };
  return defs;
}

}  // namespace

std::string tma_intrinsic_definitions(const std::set<std::string>& used, bool tensor_maps) {
  std::string text;
  for (const auto& [name, def] : definitions()) {
    if (used.count(name)) text += def;
  }
  // cutune_tma_load_2d, the store and the prefetch name the map type.
  const bool map_type = tensor_maps || used.count("cutune_tma_load_2d") ||
                        used.count("cutune_tma_load_2d_multicast") ||
                        used.count("cutune_tma_store_2d") ||
                        used.count("cutune_prefetch_tensormap");
  if (text.empty() && !map_type) return "";
  std::string out =
      "\n// mbarrier and TMA intrinsics (PTX, sm_90); the CPU emulator defines its own.\n"
      "#if defined(__CUDA_ARCH__)\n";
  if (map_type) {
    out +=
        "struct __align__(64) cutune_tensor_map {  // a CUtensorMap, encoded by the host\n"
        "  unsigned long long opaque[16];\n"
        "};\n";
  }
  return out + text + "#endif\n";
}

}  // namespace cutune
