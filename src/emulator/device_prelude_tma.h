// The device prelude, continued: the mbarrier and TMA intrinsics of src/ir/tma_intrinsics.h
// with emulated semantics, and the tensor-map parameter type. Concatenated into the prelude
// text after device_prelude.h (see prelude_text.cc.in); the same rules hold: it includes
// nothing and is never included by host code.
//
// The barrier state lives on the host (Thread::mbarrier_*; src/emulator/async_barriers.h), keyed
// by the barrier's shared-memory address. A wait suspends the thread until the phase it waits
// for has completed; the block runner delivers outstanding TMA copies (bytes, then complete_tx)
// only when every thread is blocked, so data a thread reads before its wait returns is still
// the poison pattern, and a wait that nothing can complete ends the block as a deadlock.

#define __grid_constant__
// The cluster shape is the launch's (LaunchSpec::cluster_x): the block runner reads it there.
#define __cluster_dims__(x, y, z)

// The kernel argument holds the emulator's cutune_emu_abi::TensorMapRecord.
struct __attribute__((aligned(64))) cutune_tensor_map {
  unsigned long long opaque[16];
};

static inline void cutune_mbarrier_init(long long* bar, int count, int line = __builtin_LINE()) {
  cutune_emu_self->mbarrier_init(cutune_emu_self, bar, count, line);
}
static inline void cutune_mbarrier_arrive(long long* bar, int line = __builtin_LINE()) {
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self->mbarrier_arrive(cutune_emu_self, bar, 1, 0, line);
}
static inline void cutune_mbarrier_arrive_expect_tx(long long* bar, int bytes,
                                                    int line = __builtin_LINE()) {
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self->mbarrier_arrive(cutune_emu_self, bar, 1, bytes, line);
}
static inline void cutune_mbarrier_expect_tx(long long* bar, int bytes,
                                             int line = __builtin_LINE()) {
  cutune_emu_self->mbarrier_arrive(cutune_emu_self, bar, 0, bytes, line);
}
// Both waits may switch to other threads: like __syncthreads they keep no shared-memory value
// in registers across the call and restore cutune_emu_self after it. test_wait returns at
// once when the phase is done; otherwise it lets the others run until it is and returns false
// (a thread that was slow to test again), so a polling loop makes progress.
static inline bool cutune_emu_mbarrier_wait(long long* bar, int parity, bool block, int line) {
  cutune_emu_abi::Thread* self = cutune_emu_self;
  __asm__ __volatile__("" ::: "memory");
  bool done = self->mbarrier_wait(self, bar, parity, block, line);
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self = self;
  return done;
}
static inline void cutune_mbarrier_wait_parity(long long* bar, int parity,
                                               int line = __builtin_LINE()) {
  cutune_emu_mbarrier_wait(bar, parity, true, line);
}
static inline bool cutune_mbarrier_test_wait_parity(long long* bar, int parity,
                                                    int line = __builtin_LINE()) {
  return cutune_emu_mbarrier_wait(bar, parity, false, line);
}
static inline void cutune_mbarrier_inval(long long* bar, int line = __builtin_LINE()) {
  cutune_emu_self->mbarrier_inval(cutune_emu_self, bar, line);
}
static inline void cutune_tma_load_2d(void* dst, const cutune_tensor_map& map, long long* bar,
                                      int c0, int c1, int line = __builtin_LINE()) {
  cutune_emu_self->tma_load_2d(cutune_emu_self, dst, &map, bar, c0, c1, line);
}
// Generic-proxy writes are already visible to the emulated async proxy (the copy reads global
// memory at issue and writes shared memory on delivery), so the fence orders nothing more; the
// host notes it for the sanitizer's check of TMA stores (a store of bytes not fenced since
// their write).
static inline void cutune_fence_proxy_async() {
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self->fence_proxy_async(cutune_emu_self);
}
static inline void cutune_tma_store_2d(const cutune_tensor_map& map, const void* src, int c0,
                                       int c1, int line = __builtin_LINE()) {
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self->tma_store_2d(cutune_emu_self, &map, src, c0, c1, line);
}
static inline void cutune_bulk_commit_group() { cutune_emu_self->bulk_commit(cutune_emu_self); }
static inline void cutune_bulk_wait_group_read_0(int line = __builtin_LINE()) {
  cutune_emu_self->bulk_wait(cutune_emu_self, 0, line);
  __asm__ __volatile__("" ::: "memory");
}
static inline void cutune_bulk_wait_group_read_1(int line = __builtin_LINE()) {
  cutune_emu_self->bulk_wait(cutune_emu_self, 1, line);
  __asm__ __volatile__("" ::: "memory");
}
static inline void cutune_bulk_wait_group(int line = __builtin_LINE()) {
  cutune_emu_self->bulk_wait(cutune_emu_self, 0, line);
  __asm__ __volatile__("" ::: "memory");
}
// Like __syncthreads it may switch to other threads: no shared value stays in a register
// across it, and cutune_emu_self is restored after it.
static inline void cutune_named_barrier_sync(int id, int count, int line = __builtin_LINE()) {
  cutune_emu_abi::Thread* self = cutune_emu_self;
  __asm__ __volatile__("" ::: "memory");
  self->named_barrier(self, id, count, line);
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self = self;
}
static inline void cutune_prefetch_tensormap(const cutune_tensor_map&) {}

// Clusters: the block runner runs a cluster's blocks together (cluster_runner.h). The
// cluster wait may switch to other threads, as __syncthreads does.
static inline int cutune_cluster_ctarank() { return (int)cutune_emu_self->cluster_rank; }
static inline void cutune_cluster_arrive(int line = __builtin_LINE()) {
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self->cluster_arrive(cutune_emu_self, line);
}
static inline void cutune_cluster_wait(int line = __builtin_LINE()) {
  cutune_emu_abi::Thread* self = cutune_emu_self;
  __asm__ __volatile__("" ::: "memory");
  self->cluster_wait(self, line);
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self = self;
}
// The host keeps barrier state apart from shared memory: an init is visible to the cluster
// at once, and the sanitizer checks the cluster barrier that must follow it instead.
static inline void cutune_fence_mbarrier_init() { __asm__ __volatile__("" ::: "memory"); }
static inline void cutune_mbarrier_arrive_cluster(long long* bar, int cta,
                                                  int line = __builtin_LINE()) {
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self->mbarrier_arrive_cluster(cutune_emu_self, bar, cta, line);
}
static inline void cutune_tma_load_2d_multicast(void* dst, const cutune_tensor_map& map,
                                                long long* bar, int c0, int c1, int mask,
                                                int line = __builtin_LINE()) {
  cutune_emu_self->tma_load_2d_multicast(cutune_emu_self, dst, &map, bar, c0, c1, mask, line);
}

// cutune_elect_one: elect.sync over the whole warp. Which lane the GPU elects is unspecified
// (in practice the lowest); the emulator elects the highest, so that a kernel which takes the
// elected lane for lane 0 (or thread 0) fails here instead of passing by luck.
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_elect_run(void* const* lane_args,
                                                             unsigned mask) {
  unsigned last = 31;
  while (last > 0 && !(mask >> last & 1u)) --last;
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (mask >> lane & 1u) *(int*)lane_args[lane] = lane == last;
  }
  return nullptr;
}
static inline bool cutune_elect_one(int line = __builtin_LINE()) {
  int elected = 0;
  cutune_emu_warp_collective(&cutune_emu_elect_run, "cutune_elect_one", &elected, ~0u, line);
  return elected != 0;
}

// stmatrix.sync.aligned.m8n8.x4.shared.b16, ldmatrix's mirror (device_prelude.h): lane 8j + i
// gives the address of row i of matrix j; lane l's r[j] holds matrix j's elements (l/4, 2(l%4))
// and (l/4, 2(l%4)+1). The sanitizer sees each row written by the lane that gives its address.
struct cutune_emu_stmatrix_lane {
  void* row;
  unsigned r[4];
};
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_stmatrix_run(void* const* lane_args, unsigned) {
  unsigned short m[4][8][8];
  for (unsigned lane = 0; lane < 32; ++lane) {
    const cutune_emu_stmatrix_lane* l = (const cutune_emu_stmatrix_lane*)lane_args[lane];
    if ((unsigned long long)l->row % 16 != 0) return "a row address is not 16-byte aligned";
    unsigned g = lane >> 2, t = lane & 3u;
    for (unsigned j = 0; j < 4; ++j) {
      m[j][g][2 * t] = (unsigned short)(l->r[j] & 0xffffu);
      m[j][g][2 * t + 1] = (unsigned short)(l->r[j] >> 16);
    }
  }
  for (unsigned j = 0; j < 4; ++j) {
    for (unsigned i = 0; i < 8; ++i) {
      __builtin_memcpy(((const cutune_emu_stmatrix_lane*)lane_args[8 * j + i])->row, m[j][i], 16);
    }
  }
  return nullptr;
}
static inline void cutune_stmatrix_x4(void* row, unsigned r0, unsigned r1, unsigned r2, unsigned r3,
                                      int line = __builtin_LINE()) {
  CUTUNE_EMU_NOTE(row, 16, cutune_emu_abi::kAccessMustBeShared | cutune_emu_abi::kAccessWrite,
                  line);
  cutune_emu_stmatrix_lane args{row, {r0, r1, r2, r3}};
  cutune_emu_warp_collective(&cutune_emu_stmatrix_run, "cutune_stmatrix_x4", &args, ~0u, line);
}
