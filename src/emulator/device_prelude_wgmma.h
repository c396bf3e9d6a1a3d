// The device prelude, continued: Hopper's warpgroup intrinsics (src/ir/hopper_intrinsics.h)
// with the names and signatures of the contract in src/ir/intrinsics_contract.md, "Hopper
// warpgroup intrinsics". Concatenated after device_prelude_ext.h and the descriptor helpers of
// src/ir/wgmma_descriptor.h (see prelude_text.cc.in); the same rules hold.
//
// wgmma.mma_async is warpgroup-collective: the 128 threads of a warpgroup (linear thread
// indices 128g..128g+127, warp w = lane / 32 of it) publish their operands and suspend
// (Thread::warpgroup_collective); the block runner then calls cutune_emu_wgmma_run once, which
// decodes the descriptors into shared-memory addresses (cutune_wgmma_element_address: the
// canonical layouts and swizzles), reads A (64x16) and B (16xN), and computes each thread's
// accumulators in the ISA's fragment layout: register i of lane l of warp w holds
// D[16w + l/4 + 8*((i/2)%2)][8*(i/4) + 2*(l%4) + i%2]. The results are not written to the
// registers: Thread::wgmma_issue keeps them pending (the registers hold NaN meanwhile) until
// the wgmma_wait that completes their group, so reading the accumulators early shows up, and
// writing them early is reported at the wait. A wgmma with no wgmma.fence since the thread's
// last wait is reported too (the ISA requires the fence before the first wgmma and after any
// register access; this checks the common case). fence, commit and wait are per thread. The
// offsets of the shared operands go to the host (Thread::wgmma_reads), which counts them as read
// until the wait that completes the group: writing them before that (a slot released early) is
// reported, and so is a wgmma that reads bytes a copy in flight has yet to write.

static inline void cutune_emu_warpgroup_collective(cutune_emu_abi::WarpCollective run,
                                                   const char* name, void* args, int line) {
  cutune_emu_abi::Thread* self = cutune_emu_self;
  __asm__ __volatile__("" ::: "memory");
  self->warpgroup_collective(self, run, name, args, line);
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self = self;
}

// The descriptor of a shared tile: its offset in the block's shared window stands for the
// shared-state-space address that the GPU's __cvta_generic_to_shared gives.
static inline long long cutune_wgmma_desc(const void* tile, int leading_bytes, int stride_bytes,
                                          int swizzle) {
  cutune_emu_abi::Thread* t = cutune_emu_self;
  const unsigned char* p = (const unsigned char*)tile;
  if (t->shared_window == nullptr || p < t->shared_window ||
      (unsigned long)(p - t->shared_window) >= t->shared_window_bytes) {
    t->fail(t, "cutune_wgmma_desc: the tile is not in shared memory");
  }
  unsigned long offset = (unsigned long)(p - t->shared_window);
  if (offset >= (1ul << 18)) t->fail(t, "cutune_wgmma_desc: the tile lies past 256 KiB");
  if (offset % 16 != 0) t->fail(t, "cutune_wgmma_desc: the tile is not 16-byte aligned");
  return (long long)cutune_wgmma_desc_encode((unsigned)offset, (unsigned)leading_bytes,
                                             (unsigned)stride_bytes, 0, (unsigned)swizzle);
}

struct cutune_emu_wgmma_lane {
  cutune_emu_abi::Thread* self;
  float* d;
  const unsigned* a;  // A in registers: 4 words; null for A from shared memory
  unsigned long long desc_a, desc_b;
  int scale_d;
};

// Reads the 16-bit element (mn, k) of the operand `desc` describes, as a float.
template <bool kBf16>
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_wgmma_element(const cutune_emu_abi::Thread* t,
                                                                 unsigned long long desc,
                                                                 bool mn_major, unsigned mn,
                                                                 unsigned k, float* out,
                                                                 unsigned* at) {
  unsigned address = cutune_wgmma_element_address(desc, mn_major, mn, k);
  if ((unsigned long)address + 2 > t->shared_window_bytes) {
    return "a wgmma descriptor addresses past the block's shared memory";
  }
  *at = address;
  unsigned short bits;
  __builtin_memcpy(&bits, t->shared_window + address, 2);
  *out = kBf16 ? cutune_bf16_to_f32(bits) : cutune_f16_to_f32(bits);
  return nullptr;
}

template <unsigned N, bool kBf16, bool kTransA, bool kTransB, bool kRegA>
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_wgmma_run(void* const* lane_args, unsigned) {
  const cutune_emu_wgmma_lane* first = (const cutune_emu_wgmma_lane*)lane_args[0];
  for (unsigned lane = 1; lane < 128; ++lane) {
    const cutune_emu_wgmma_lane* l = (const cutune_emu_wgmma_lane*)lane_args[lane];
    if (l->desc_b != first->desc_b || (!kRegA && l->desc_a != first->desc_a)) {
      return "the matrix descriptors differ across the warpgroup";
    }
    if ((l->scale_d != 0) != (first->scale_d != 0)) return "scale-d differs across the warpgroup";
  }
  float a[64][16];
  float b[16][N];
  unsigned reads[64 * 16 + 16 * N];  // the shared offsets read, for the host's hazard checks
  int n_reads = 0;
  cutune_emu_abi::Thread* t = first->self;
  if (kRegA) {
    for (unsigned lane = 0; lane < 128; ++lane) {
      const cutune_emu_wgmma_lane* l = (const cutune_emu_wgmma_lane*)lane_args[lane];
      unsigned w = lane / 32, g = lane % 32 / 4, q = lane % 4;
      for (unsigned i = 0; i < 8; ++i) {
        unsigned short bits = (unsigned short)(l->a[i >> 1] >> (16 * (i & 1u)));
        a[16 * w + g + 8 * ((i >> 1) & 1u)][2 * q + (i & 1u) + 8 * (i >> 2)] =
            kBf16 ? cutune_bf16_to_f32(bits) : cutune_f16_to_f32(bits);
      }
    }
  } else {
    for (unsigned m = 0; m < 64; ++m) {
      for (unsigned k = 0; k < 16; ++k) {
        const char* e = cutune_emu_wgmma_element<kBf16>(t, first->desc_a, kTransA, m, k, &a[m][k],
                                                        &reads[n_reads++]);
        if (e != nullptr) return e;
      }
    }
  }
  for (unsigned n = 0; n < N; ++n) {
    for (unsigned k = 0; k < 16; ++k) {
      const char* e = cutune_emu_wgmma_element<kBf16>(t, first->desc_b, kTransB, n, k, &b[k][n],
                                                      &reads[n_reads++]);
      if (e != nullptr) return e;
    }
  }
  const char* hazard = t->wgmma_reads(t, reads, n_reads);
  if (hazard != nullptr) return hazard;
  for (unsigned lane = 0; lane < 128; ++lane) {
    const cutune_emu_wgmma_lane* l = (const cutune_emu_wgmma_lane*)lane_args[lane];
    float* acc = nullptr;
    const char* e = l->self->wgmma_issue(l->self, l->d, (int)(N / 2 * sizeof(float)), &acc);
    if (e != nullptr) return e;
    unsigned w = lane / 32, g = lane % 32 / 4, q = lane % 4;
    for (unsigned i = 0; i < N / 2; ++i) {
      unsigned row = 16 * w + g + 8 * ((i >> 1) & 1u), col = 8 * (i >> 2) + 2 * q + (i & 1u);
      float sum = l->scale_d != 0 ? acc[i] : 0.0f;
      for (unsigned k = 0; k < 16; ++k) sum += a[row][k] * b[k][col];  // products are exact
      acc[i] = sum;
    }
  }
  return nullptr;
}

template <unsigned N, bool kBf16, bool kTransA, bool kTransB, bool kRegA>
static inline void cutune_emu_wgmma(float* d, const unsigned* a, unsigned long long desc_a,
                                    unsigned long long desc_b, int scale_d, int line,
                                    const char* name) {
  cutune_emu_wgmma_lane args{cutune_emu_self, d, a, desc_a, desc_b, scale_d};
  cutune_emu_warpgroup_collective(&cutune_emu_wgmma_run<N, kBf16, kTransA, kTransB, kRegA>, name,
                                  &args, line);
}

#define CUTUNE_EMU_WGMMA_SS(n_, ty, bf, ta, tb, sfx)                                             \
  static __forceinline__ void cutune_wgmma_m64n##n_##k16_f32_##ty##_ss_##sfx(                    \
      float* d, unsigned long long desc_a, unsigned long long desc_b, int scale_d,               \
      int line = __builtin_LINE()) {                                                             \
    cutune_emu_wgmma<n_, bf, ta, tb, false>(d, nullptr, desc_a, desc_b, scale_d, line,           \
                                            "cutune_wgmma_m64n" #n_ "k16_f32_" #ty "_ss_" #sfx); \
  }
#define CUTUNE_EMU_WGMMA_RS(n_, ty, bf, tb, sfx)                                                   \
  static __forceinline__ void cutune_wgmma_m64n##n_##k16_f32_##ty##_rs_##sfx(                      \
      float* d, const unsigned* a, unsigned long long desc_b, int scale_d,                         \
      int line = __builtin_LINE()) {                                                               \
    cutune_emu_wgmma<n_, bf, false, tb, true>(d, a, 0, desc_b, scale_d, line,                      \
                                              "cutune_wgmma_m64n" #n_ "k16_f32_" #ty "_rs_" #sfx); \
  }
#define CUTUNE_EMU_WGMMA_TYPE(n_, ty, bf)           \
  CUTUNE_EMU_WGMMA_SS(n_, ty, bf, false, false, nn) \
  CUTUNE_EMU_WGMMA_SS(n_, ty, bf, false, true, nt)  \
  CUTUNE_EMU_WGMMA_SS(n_, ty, bf, true, false, tn)  \
  CUTUNE_EMU_WGMMA_SS(n_, ty, bf, true, true, tt)   \
  CUTUNE_EMU_WGMMA_RS(n_, ty, bf, false, n)         \
  CUTUNE_EMU_WGMMA_RS(n_, ty, bf, true, t)
#define CUTUNE_EMU_WGMMA_N(n_) \
  CUTUNE_EMU_WGMMA_TYPE(n_, f16, false) CUTUNE_EMU_WGMMA_TYPE(n_, bf16, true)
CUTUNE_EMU_WGMMA_N(8)
CUTUNE_EMU_WGMMA_N(16)
CUTUNE_EMU_WGMMA_N(24)
CUTUNE_EMU_WGMMA_N(32)
CUTUNE_EMU_WGMMA_N(40)
CUTUNE_EMU_WGMMA_N(48)
CUTUNE_EMU_WGMMA_N(56)
CUTUNE_EMU_WGMMA_N(64)
CUTUNE_EMU_WGMMA_N(72)
CUTUNE_EMU_WGMMA_N(80)
CUTUNE_EMU_WGMMA_N(88)
CUTUNE_EMU_WGMMA_N(96)
CUTUNE_EMU_WGMMA_N(104)
CUTUNE_EMU_WGMMA_N(112)
CUTUNE_EMU_WGMMA_N(120)
CUTUNE_EMU_WGMMA_N(128)
CUTUNE_EMU_WGMMA_N(136)
CUTUNE_EMU_WGMMA_N(144)
CUTUNE_EMU_WGMMA_N(152)
CUTUNE_EMU_WGMMA_N(160)
CUTUNE_EMU_WGMMA_N(168)
CUTUNE_EMU_WGMMA_N(176)
CUTUNE_EMU_WGMMA_N(184)
CUTUNE_EMU_WGMMA_N(192)
CUTUNE_EMU_WGMMA_N(200)
CUTUNE_EMU_WGMMA_N(208)
CUTUNE_EMU_WGMMA_N(216)
CUTUNE_EMU_WGMMA_N(224)
CUTUNE_EMU_WGMMA_N(232)
CUTUNE_EMU_WGMMA_N(240)
CUTUNE_EMU_WGMMA_N(248)
CUTUNE_EMU_WGMMA_N(256)
#undef CUTUNE_EMU_WGMMA_N
#undef CUTUNE_EMU_WGMMA_TYPE
#undef CUTUNE_EMU_WGMMA_RS
#undef CUTUNE_EMU_WGMMA_SS

static inline void cutune_wgmma_fence() { cutune_emu_self->wgmma_fence(cutune_emu_self); }
static inline void cutune_wgmma_commit_group() { cutune_emu_self->wgmma_commit(cutune_emu_self); }
static inline void cutune_emu_wgmma_wait(int pending) {
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self->wgmma_wait(cutune_emu_self, pending);
  __asm__ __volatile__("" ::: "memory");
}
static inline void cutune_wgmma_wait_group_0() { cutune_emu_wgmma_wait(0); }
static inline void cutune_wgmma_wait_group_1() { cutune_emu_wgmma_wait(1); }
static inline void cutune_wgmma_wait_group_2() { cutune_emu_wgmma_wait(2); }
static inline void cutune_wgmma_wait_group_3() { cutune_emu_wgmma_wait(3); }
static inline void cutune_wgmma_wait_group_4() { cutune_emu_wgmma_wait(4); }
static inline void cutune_wgmma_wait_group_5() { cutune_emu_wgmma_wait(5); }
static inline void cutune_wgmma_wait_group_6() { cutune_emu_wgmma_wait(6); }
static inline void cutune_wgmma_wait_group_7() { cutune_emu_wgmma_wait(7); }
// Only a compiler barrier on the GPU; the emulator's memory clobbers already order the accesses.
static inline void cutune_wgmma_fence_operand(float*) {}
// cutune_fence_proxy_async is defined with the TMA intrinsics (device_prelude_tma.h): the
// emulator has one proxy, so generic writes are visible to wgmma's reads once done.

// setmaxnreg: the emulator has no register file; it checks that the warpgroup meets there.
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_setmaxnreg_run(void* const*, unsigned) {
  return nullptr;
}
#define CUTUNE_EMU_SETMAXNREG(count)                                                             \
  static inline void cutune_setmaxnreg_inc_##count(int line = __builtin_LINE()) {                \
    cutune_emu_warpgroup_collective(&cutune_emu_setmaxnreg_run, "cutune_setmaxnreg_inc_" #count, \
                                    nullptr, line);                                              \
  }                                                                                              \
  static inline void cutune_setmaxnreg_dec_##count(int line = __builtin_LINE()) {                \
    cutune_emu_warpgroup_collective(&cutune_emu_setmaxnreg_run, "cutune_setmaxnreg_dec_" #count, \
                                    nullptr, line);                                              \
  }
CUTUNE_EMU_SETMAXNREG(24)
CUTUNE_EMU_SETMAXNREG(32)
CUTUNE_EMU_SETMAXNREG(40)
CUTUNE_EMU_SETMAXNREG(48)
CUTUNE_EMU_SETMAXNREG(56)
CUTUNE_EMU_SETMAXNREG(64)
CUTUNE_EMU_SETMAXNREG(72)
CUTUNE_EMU_SETMAXNREG(80)
CUTUNE_EMU_SETMAXNREG(88)
CUTUNE_EMU_SETMAXNREG(96)
CUTUNE_EMU_SETMAXNREG(104)
CUTUNE_EMU_SETMAXNREG(112)
CUTUNE_EMU_SETMAXNREG(120)
CUTUNE_EMU_SETMAXNREG(128)
CUTUNE_EMU_SETMAXNREG(136)
CUTUNE_EMU_SETMAXNREG(144)
CUTUNE_EMU_SETMAXNREG(152)
CUTUNE_EMU_SETMAXNREG(160)
CUTUNE_EMU_SETMAXNREG(168)
CUTUNE_EMU_SETMAXNREG(176)
CUTUNE_EMU_SETMAXNREG(184)
CUTUNE_EMU_SETMAXNREG(192)
CUTUNE_EMU_SETMAXNREG(200)
CUTUNE_EMU_SETMAXNREG(208)
CUTUNE_EMU_SETMAXNREG(216)
CUTUNE_EMU_SETMAXNREG(224)
CUTUNE_EMU_SETMAXNREG(232)
CUTUNE_EMU_SETMAXNREG(240)
CUTUNE_EMU_SETMAXNREG(248)
CUTUNE_EMU_SETMAXNREG(256)
#undef CUTUNE_EMU_SETMAXNREG
