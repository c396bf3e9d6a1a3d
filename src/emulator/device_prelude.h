// The device prelude: force-included, after device_abi.h, before every kernel the emulator
// compiles, so that the exact CUDA C that cutune generates builds with the host C++ compiler.
// Never included by host code. It includes nothing, which keeps a kernel's compile fast.
//
// The execution model it relies on (see block_runner.h): one host thread runs one block at a
// time, the block's CUDA threads as fibers that switch only inside __syncthreads. Hence
//  - __shared__ is thread_local: a block's shared memory is its host thread's storage, and a
//    fiber caches no address that another host thread would see differently;
//  - threadIdx and the other built-ins read the running fiber's record through the
//    thread-local `cutune_emu_self`, which __syncthreads restores after the switch;
//  - global memory is ordinary memory shared by all host threads, so atomics are real ones.

typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __SIZE_TYPE__ size_t;

#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// CUTUNE_EMU_KEEP_ORDER (sanitized objects): see below.
#if defined(CUTUNE_EMU_SANITIZE)
#define CUTUNE_EMU_KEEP_ORDER __attribute__((no_reorder))
#else
#define CUTUNE_EMU_KEEP_ORDER
#endif
#define __shared__ thread_local CUTUNE_EMU_KEEP_ORDER

#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define FLT_MAX __FLT_MAX__

typedef cutune_emu_abi::Dim3 uint3;
typedef cutune_emu_abi::Dim3 dim3;

static thread_local cutune_emu_abi::Thread* cutune_emu_self CUTUNE_EMU_KEEP_ORDER = nullptr;

// The sanitizer (sanitizer.h). With CUTUNE_EMU_SANITIZE the object is compiled with
// -fsanitize=kernel-address, which calls __asan_{load,store}N_noabort before every memory
// access; these forward each one to the host's hook. Thread-local (shared) variables are
// CUTUNE_EMU_KEEP_ORDER (no_reorder), so they lie in declaration order, and the emulator puts a
// red zone after each __shared__ array: this one keeps the first array off cutune_emu_self.
// (-fno-toplevel-reorder would do the same for every symbol, but it also makes the compiler
// emit every unused inline function of this prelude, which tripled the compile time.) Code the
// sanitizer must not see as the calling thread's own accesses (the warp-collective operations run
// by the scheduler, atomics) is CUTUNE_EMU_UNCHECKED.
#if defined(CUTUNE_EMU_SANITIZE)
static thread_local char cutune_emu_redzone_self[128] __attribute__((used, no_reorder));
#define CUTUNE_EMU_UNCHECKED __attribute__((no_sanitize_address))
extern "C" {
__attribute__((visibility("default"))) cutune_emu_abi::AccessHook cutune_emu_access_hook = nullptr;
#define CUTUNE_EMU_ACCESS_CALLBACKS(n)                                           \
  CUTUNE_EMU_UNCHECKED void __asan_load##n##_noabort(unsigned long a) {          \
    cutune_emu_access_hook(a, n, 0, (unsigned long)__builtin_return_address(0)); \
  }                                                                              \
  CUTUNE_EMU_UNCHECKED void __asan_store##n##_noabort(unsigned long a) {         \
    cutune_emu_access_hook(a, n, cutune_emu_abi::kAccessWrite,                   \
                           (unsigned long)__builtin_return_address(0));          \
  }
CUTUNE_EMU_ACCESS_CALLBACKS(1)
CUTUNE_EMU_ACCESS_CALLBACKS(2)
CUTUNE_EMU_ACCESS_CALLBACKS(4)
CUTUNE_EMU_ACCESS_CALLBACKS(8)
CUTUNE_EMU_ACCESS_CALLBACKS(16)
#undef CUTUNE_EMU_ACCESS_CALLBACKS
CUTUNE_EMU_UNCHECKED void __asan_loadN_noabort(unsigned long a, unsigned long n) {
  cutune_emu_access_hook(a, (unsigned)n, 0, (unsigned long)__builtin_return_address(0));
}
CUTUNE_EMU_UNCHECKED void __asan_storeN_noabort(unsigned long a, unsigned long n) {
  cutune_emu_access_hook(a, (unsigned)n, cutune_emu_abi::kAccessWrite,
                         (unsigned long)__builtin_return_address(0));
}
CUTUNE_EMU_UNCHECKED void __asan_handle_no_return() {}
CUTUNE_EMU_UNCHECKED void __asan_before_dynamic_init(const char*) {}
CUTUNE_EMU_UNCHECKED void __asan_after_dynamic_init() {}
}
#define CUTUNE_EMU_NOTE(address, bytes, flags, line)      \
  cutune_emu_access_hook((unsigned long)(address), bytes, \
                         (flags) | cutune_emu_abi::kAccessWhereIsLine, (unsigned long)(line))
#define CUTUNE_EMU_ATOMIC __attribute__((noinline, no_sanitize_address))
// The sanitized kernel source reaches each shared array through this (postlude.h).
template <class T>
static inline T* cutune_emu_opaque(T* p) {
  __asm__("" : "+r"(p));
  return p;
}
#else
#define CUTUNE_EMU_UNCHECKED
#define CUTUNE_EMU_NOTE(address, bytes, flags, line) ((void)0)
#define CUTUNE_EMU_ATOMIC
#endif

#define threadIdx (cutune_emu_self->thread_idx)
#define blockIdx (cutune_emu_self->block_idx)
#define blockDim (cutune_emu_self->block_dim)
#define gridDim (cutune_emu_self->grid_dim)

// The memory clobbers keep the compiler from carrying shared-memory values in registers
// across the switch to the other threads of the block.
static inline void cutune_emu_syncthreads(int line) {
  cutune_emu_abi::Thread* self = cutune_emu_self;
  __asm__ __volatile__("" ::: "memory");
  self->barrier(self, line);
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self = self;
}
#define __syncthreads() cutune_emu_syncthreads(__LINE__)
#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_block() __asm__ __volatile__("" ::: "memory")

struct __attribute__((aligned(8))) float2 {
  float x, y;
};
struct float3 {
  float x, y, z;
};
struct __attribute__((aligned(16))) float4 {
  float x, y, z, w;
};
struct __attribute__((aligned(8))) int2 {
  int x, y;
};
struct int3 {
  int x, y, z;
};
struct __attribute__((aligned(16))) int4 {
  int x, y, z, w;
};
struct __attribute__((aligned(8))) uint2 {
  unsigned x, y;
};
struct __attribute__((aligned(16))) uint4 {
  unsigned x, y, z, w;
};
struct __attribute__((aligned(16))) double2 {
  double x, y;
};

static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return int2{x, y}; }
static inline int3 make_int3(int x, int y, int z) { return int3{x, y, z}; }
static inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
static inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return uint4{x, y, z, w};
}
static inline double2 make_double2(double x, double y) { return double2{x, y}; }

// Declared, not defined, exactly as libm has them: the compiler treats them as built-ins and
// inlines what it can; the rest resolve to libm, which the compiler driver links.
extern "C" {
float expf(float);
float exp2f(float);
float logf(float);
float log2f(float);
float powf(float, float);
float sqrtf(float);
float fabsf(float);
float fmaf(float, float, float);
float fminf(float, float);
float fmaxf(float, float);
float floorf(float);
float ceilf(float);
float tanhf(float);
float sinf(float);
float cosf(float);
float erff(float);
double exp(double);
double log(double);
double sqrt(double);
double fabs(double);
double fma(double, double, double);
double fmin(double, double);
double fmax(double, double);
}

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float __expf(float x) { return expf(x); }
static inline float __logf(float x) { return logf(x); }
static inline float __powf(float x, float y) { return powf(x, y); }
static inline float __fdividef(float x, float y) { return x / y; }
static inline float __saturatef(float x) { return fminf(fmaxf(x, 0.0f), 1.0f); }

static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline unsigned min(int a, unsigned b) { return min(unsigned(a), b); }
static inline unsigned max(int a, unsigned b) { return max(unsigned(a), b); }
static inline unsigned min(unsigned a, int b) { return min(a, unsigned(b)); }
static inline unsigned max(unsigned a, int b) { return max(a, unsigned(b)); }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }

template <class T>
static inline T __ldg(const T* p) {
  return *p;
}

static inline int __float_as_int(float f) {
  int i;
  __builtin_memcpy(&i, &f, 4);
  return i;
}
static inline unsigned __float_as_uint(float f) {
  unsigned u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}
static inline float __int_as_float(int i) {
  float f;
  __builtin_memcpy(&f, &i, 4);
  return f;
}
static inline float __uint_as_float(unsigned u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

// Blocks run concurrently on several host threads, so these must be real atomics. The
// sanitizer sees each as one atomic access (bounds checked, never a race) at the caller's line.
static CUTUNE_EMU_ATOMIC int atomicAdd(int* p, int v, int line = __builtin_LINE()) {
  CUTUNE_EMU_NOTE(p, 4, cutune_emu_abi::kAccessAtomic | cutune_emu_abi::kAccessWrite, line);
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static CUTUNE_EMU_ATOMIC unsigned atomicAdd(unsigned* p, unsigned v, int line = __builtin_LINE()) {
  CUTUNE_EMU_NOTE(p, 4, cutune_emu_abi::kAccessAtomic | cutune_emu_abi::kAccessWrite, line);
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static CUTUNE_EMU_ATOMIC float atomicAdd(float* p, float v, int line = __builtin_LINE()) {
  CUTUNE_EMU_NOTE(p, 4, cutune_emu_abi::kAccessAtomic | cutune_emu_abi::kAccessWrite, line);
  float old = *p, next;
  do {
    next = old + v;
  } while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}
static CUTUNE_EMU_ATOMIC int atomicMax(int* p, int v, int line = __builtin_LINE()) {
  CUTUNE_EMU_NOTE(p, 4, cutune_emu_abi::kAccessAtomic | cutune_emu_abi::kAccessWrite, line);
  int old = *p;
  while (old < v &&
         !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
static CUTUNE_EMU_ATOMIC int atomicMin(int* p, int v, int line = __builtin_LINE()) {
  CUTUNE_EMU_NOTE(p, 4, cutune_emu_abi::kAccessAtomic | cutune_emu_abi::kAccessWrite, line);
  int old = *p;
  while (old > v &&
         !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}

// Tensor-core and warp-level intrinsics, with the names and signatures of the contract in
// src/ir/intrinsics_contract.md. Generated CUDA calls them; on a GPU the code generator's
// definitions (inline PTX, inside `#if defined(__CUDA_ARCH__)`) are compiled instead of these.
//
// mma, ldmatrix, the shuffles and __syncwarp are warp-collective: every lane publishes its
// operands and suspends at a warp barrier (Thread::warp_collective); once all lanes of the
// mask are there, the block runner calls the operation's `cutune_emu_*_run` once, which reads
// every lane's operands and writes every lane's results, exactly by the PTX ISA's fragment
// layouts. Each takes a trailing `line` defaulted to the caller's line: two lanes of a warp
// at different call sites are a divergence, and the message says where. Declare these names
// nowhere else (a second, 4-parameter declaration would make the calls ambiguous).
//
// 16-bit floats travel as their raw bits (cutune_half: IEEE binary16, cutune_bf16: bfloat16),
// two to a 32-bit register with the lower-indexed element in bits 0-15.

typedef unsigned short cutune_half;
typedef unsigned short cutune_bf16;

// Round-to-nearest-even; overflow gives Inf, NaN the canonical NaN 0x7fff.
static inline cutune_half cutune_f32_to_f16(float f) {
  unsigned x = __float_as_uint(f);
  unsigned sign = (x >> 16) & 0x8000u;
  unsigned ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7fff;
  if (ax >= 0x477ff000u) return (cutune_half)(sign | 0x7c00u);  // >= 65520: ties up to 2^16
  if (ax >= 0x38800000u) {  // normal in binary16: rebias the exponent from 127 to 15
    unsigned rounded = ax + 0xfffu + ((ax >> 13) & 1u);
    return (cutune_half)(sign | ((rounded - 0x38000000u) >> 13));
  }
  unsigned e = ax >> 23;
  if (e < 102) return (cutune_half)sign;  // below half the smallest subnormal, 2^-25
  // Subnormal: the value in units of 2^-24 is the 24-bit significand shifted right.
  unsigned significand = (ax & 0x7fffffu) | 0x800000u;
  unsigned shift = 126 - e;
  unsigned m = significand >> shift;
  unsigned rest = significand & ((1u << shift) - 1);
  unsigned half = 1u << (shift - 1);
  if (rest > half || (rest == half && (m & 1u) != 0)) ++m;
  return (cutune_half)(sign | m);
}

static inline float cutune_f16_to_f32(cutune_half h) {
  unsigned sign = (unsigned)(h & 0x8000u) << 16;
  unsigned e = (h >> 10) & 0x1fu;
  unsigned m = h & 0x3ffu;
  if (e == 31) return __uint_as_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) return __uint_as_float(sign | __float_as_uint((float)m * 0x1p-24f));
  return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));
}

static inline cutune_bf16 cutune_f32_to_bf16(float f) {
  unsigned x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  return (cutune_bf16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline float cutune_bf16_to_f32(cutune_bf16 b) { return __uint_as_float((unsigned)b << 16); }

static inline unsigned cutune_pack_f16x2(float lo, float hi) {
  return (unsigned)cutune_f32_to_f16(lo) | (unsigned)cutune_f32_to_f16(hi) << 16;
}
static inline unsigned cutune_pack_bf16x2(float lo, float hi) {
  return (unsigned)cutune_f32_to_bf16(lo) | (unsigned)cutune_f32_to_bf16(hi) << 16;
}

static inline void cutune_emu_warp_collective(cutune_emu_abi::WarpCollective run, const char* name,
                                              void* args, unsigned mask, int line) {
  cutune_emu_abi::Thread* self = cutune_emu_self;
  __asm__ __volatile__("" ::: "memory");
  self->warp_collective(self, run, name, args, mask, line);
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self = self;
}

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32. With g = lane / 4 and
// t = lane % 4, lane holds A (16x16) elements a[i/2] half i%2, i in 0..7, at row g + 8 * (i/2 % 2),
// col 2t + i%2 + 8 * (i/4); B (16x8) elements b[i/2] half i%2, i in 0..3, at row 2t + i%2 + 8 *
// (i/2), col g; C and D (16x8) element i at row g + 8 * (i/2), col 2t + i%2.
struct cutune_emu_mma_lane {
  float* d;
  const unsigned* a;
  const unsigned* b;
  const float* c;
};

template <bool kBf16>
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_mma_run(void* const* lane_args, unsigned) {
  float a[16][16], b[16][8], c[16][8];
  for (unsigned lane = 0; lane < 32; ++lane) {
    const cutune_emu_mma_lane* l = (const cutune_emu_mma_lane*)lane_args[lane];
    unsigned g = lane >> 2, t = lane & 3u;
    for (unsigned i = 0; i < 8; ++i) {
      unsigned short bits = (unsigned short)(l->a[i >> 1] >> (16 * (i & 1u)));
      a[g + 8 * ((i >> 1) & 1u)][2 * t + (i & 1u) + 8 * (i >> 2)] =
          kBf16 ? cutune_bf16_to_f32(bits) : cutune_f16_to_f32(bits);
    }
    for (unsigned i = 0; i < 4; ++i) {
      unsigned short bits = (unsigned short)(l->b[i >> 1] >> (16 * (i & 1u)));
      b[2 * t + (i & 1u) + 8 * (i >> 1)][g] =
          kBf16 ? cutune_bf16_to_f32(bits) : cutune_f16_to_f32(bits);
    }
    for (unsigned i = 0; i < 4; ++i) c[g + 8 * (i >> 1)][2 * t + (i & 1u)] = l->c[i];
  }
  // Every lane's inputs are read before any result is written: d may alias c.
  for (unsigned lane = 0; lane < 32; ++lane) {
    const cutune_emu_mma_lane* l = (const cutune_emu_mma_lane*)lane_args[lane];
    unsigned g = lane >> 2, t = lane & 3u;
    for (unsigned i = 0; i < 4; ++i) {
      unsigned row = g + 8 * (i >> 1), col = 2 * t + (i & 1u);
      float acc = c[row][col];
      for (unsigned k = 0; k < 16; ++k) acc += a[row][k] * b[k][col];  // products are exact
      l->d[i] = acc;
    }
  }
  return nullptr;
}

static __forceinline__ void cutune_mma_m16n8k16_f16(float d[4], const unsigned a[4],
                                                    const unsigned b[2], const float c[4],
                                                    int line = __builtin_LINE()) {
  cutune_emu_mma_lane args{d, a, b, c};
  cutune_emu_warp_collective(&cutune_emu_mma_run<false>, "cutune_mma_m16n8k16_f16", &args,
                             0xffffffffu, line);
}
static __forceinline__ void cutune_mma_m16n8k16_bf16(float d[4], const unsigned a[4],
                                                     const unsigned b[2], const float c[4],
                                                     int line = __builtin_LINE()) {
  cutune_emu_mma_lane args{d, a, b, c};
  cutune_emu_warp_collective(&cutune_emu_mma_run<true>, "cutune_mma_m16n8k16_bf16", &args,
                             0xffffffffu, line);
}

// ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16: lane 8j + i gives the address of row i of
// matrix j (16 bytes, 16-byte aligned); lanes past 8N give none. Lane l receives in r[j]
// matrix j's elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1), or with .trans (2(l%4), l/4) and
// (2(l%4)+1, l/4).
struct cutune_emu_ldmatrix_lane {
  unsigned* r;
  const void* row;
};

template <unsigned kMatrices, bool kTrans>
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_ldmatrix_run(void* const* lane_args, unsigned) {
  for (unsigned lane = 0; lane < 8 * kMatrices; ++lane) {
    unsigned long long at =
        (unsigned long long)((const cutune_emu_ldmatrix_lane*)lane_args[lane])->row;
    if (at % 16 != 0) return "a row address is not 16-byte aligned";
  }
  unsigned short m[4][8][8];
  for (unsigned j = 0; j < kMatrices; ++j) {
    for (unsigned i = 0; i < 8; ++i) {
      __builtin_memcpy(m[j][i], ((const cutune_emu_ldmatrix_lane*)lane_args[8 * j + i])->row, 16);
    }
  }
  for (unsigned lane = 0; lane < 32; ++lane) {
    const cutune_emu_ldmatrix_lane* l = (const cutune_emu_ldmatrix_lane*)lane_args[lane];
    unsigned g = lane >> 2, t = lane & 3u;
    for (unsigned j = 0; j < kMatrices; ++j) {
      unsigned lo = kTrans ? m[j][2 * t][g] : m[j][g][2 * t];
      unsigned hi = kTrans ? m[j][2 * t + 1][g] : m[j][g][2 * t + 1];
      l->r[j] = lo | hi << 16;
    }
  }
  return nullptr;
}

// The sanitizer sees each row read by the lane that gives its address, which must lie in
// shared memory.
static inline void cutune_emu_ldmatrix_note(const void* row_address, unsigned matrices, int line) {
#if defined(CUTUNE_EMU_SANITIZE)
  const cutune_emu_abi::Thread* t = cutune_emu_self;
  unsigned linear =
      t->thread_idx.x + t->block_dim.x * (t->thread_idx.y + t->block_dim.y * t->thread_idx.z);
  if ((linear & 31u) < 8 * matrices) {
    CUTUNE_EMU_NOTE(row_address, 16, cutune_emu_abi::kAccessMustBeShared, line);
  }
#else
  (void)row_address, (void)matrices, (void)line;
#endif
}

#define CUTUNE_EMU_LDMATRIX(suffix, matrices, trans)                                  \
  static __forceinline__ void cutune_ldmatrix_##suffix(                               \
      unsigned r[matrices], const void* row_address, int line = __builtin_LINE()) {   \
    cutune_emu_ldmatrix_note(row_address, matrices, line);                            \
    cutune_emu_ldmatrix_lane args{r, row_address};                                    \
    cutune_emu_warp_collective(&cutune_emu_ldmatrix_run<matrices, trans>,             \
                               "cutune_ldmatrix_" #suffix, &args, 0xffffffffu, line); \
  }
CUTUNE_EMU_LDMATRIX(x1, 1, false)
CUTUNE_EMU_LDMATRIX(x2, 2, false)
CUTUNE_EMU_LDMATRIX(x4, 4, false)
CUTUNE_EMU_LDMATRIX(x1_trans, 1, true)
CUTUNE_EMU_LDMATRIX(x2_trans, 2, true)
CUTUNE_EMU_LDMATRIX(x4_trans, 4, true)
#undef CUTUNE_EMU_LDMATRIX

// cp.async: see Thread::cp_async. The copy lands only at a wait that completes its group, so
// shared memory read before the wait still holds the poison pattern (or older data).
static inline void cutune_cp_async_16(void* shared_dst, const void* global_src, int src_bytes,
                                      int line = __builtin_LINE()) {
  cutune_emu_self->cp_async(cutune_emu_self, shared_dst, global_src, 16, src_bytes, line);
}
static inline void cutune_cp_async_8(void* shared_dst, const void* global_src, int src_bytes,
                                     int line = __builtin_LINE()) {
  cutune_emu_self->cp_async(cutune_emu_self, shared_dst, global_src, 8, src_bytes, line);
}
static inline void cutune_cp_async_4(void* shared_dst, const void* global_src, int src_bytes,
                                     int line = __builtin_LINE()) {
  cutune_emu_self->cp_async(cutune_emu_self, shared_dst, global_src, 4, src_bytes, line);
}
static inline void cutune_cp_async_commit() { cutune_emu_self->cp_async_commit(cutune_emu_self); }
static inline void cutune_emu_cp_async_wait(int pending) {
  __asm__ __volatile__("" ::: "memory");
  cutune_emu_self->cp_async_wait(cutune_emu_self, pending);
  __asm__ __volatile__("" ::: "memory");
}
static inline void cutune_cp_async_wait_0() { cutune_emu_cp_async_wait(0); }
static inline void cutune_cp_async_wait_1() { cutune_emu_cp_async_wait(1); }
static inline void cutune_cp_async_wait_2() { cutune_emu_cp_async_wait(2); }
static inline void cutune_cp_async_wait_3() { cutune_emu_cp_async_wait(3); }
static inline void cutune_cp_async_wait_4() { cutune_emu_cp_async_wait(4); }

// __syncwarp and the shuffles of CUDA's warp-level primitives, for the lanes in `mask`.
// Shuffles follow PTX shfl.sync: lanes form segments of `width`; a source lane outside the
// caller's segment (above it, for down and xor) gives the caller its own value.
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_syncwarp_run(void* const*, unsigned) {
  return nullptr;
}
static inline void __syncwarp(unsigned mask = 0xffffffffu, int line = __builtin_LINE()) {
  cutune_emu_warp_collective(&cutune_emu_syncwarp_run, "__syncwarp", nullptr, mask, line);
}

enum cutune_emu_shfl_mode { cutune_emu_shfl_idx, cutune_emu_shfl_down, cutune_emu_shfl_xor };

template <class T>
struct cutune_emu_shfl_lane {
  T value;  // in: this lane's value; out: the shuffled one
  unsigned operand;
  int width;
};

template <class T, cutune_emu_shfl_mode kMode>
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_shfl_run(void* const* lane_args, unsigned mask) {
  T in[32];
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (lane_args[lane] != nullptr) in[lane] = ((cutune_emu_shfl_lane<T>*)lane_args[lane])->value;
  }
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (lane_args[lane] == nullptr) continue;
    cutune_emu_shfl_lane<T>* l = (cutune_emu_shfl_lane<T>*)lane_args[lane];
    unsigned width = (unsigned)l->width;
    if (width == 0 || width > 32 || (width & (width - 1)) != 0) {
      return "width is not a power of two in 1..32";
    }
    unsigned first = lane & ~(width - 1), last = first + width - 1;
    unsigned src = kMode == cutune_emu_shfl_idx    ? first + (l->operand & (width - 1))
                   : kMode == cutune_emu_shfl_down ? lane + l->operand
                                                   : lane ^ (l->operand & 31u);
    if (src > last) src = lane;
    if ((mask >> src & 1u) == 0) return "a lane reads from a lane outside the mask";
    l->value = in[src];
  }
  return nullptr;
}

template <cutune_emu_shfl_mode kMode, class T>
static inline T cutune_emu_shfl(unsigned mask, T v, unsigned operand, int width, int line,
                                const char* name) {
  cutune_emu_shfl_lane<T> args{v, operand, width};
  cutune_emu_warp_collective(&cutune_emu_shfl_run<T, kMode>, name, &args, mask, line);
  return args.value;
}

#define CUTUNE_EMU_SHUFFLES(T)                                                                     \
  static inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32,                    \
                              int line = __builtin_LINE()) {                                       \
    return cutune_emu_shfl<cutune_emu_shfl_idx>(mask, v, (unsigned)src_lane, width, line,          \
                                                "__shfl_sync");                                    \
  }                                                                                                \
  static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,             \
                                   int line = __builtin_LINE()) {                                  \
    return cutune_emu_shfl<cutune_emu_shfl_down>(mask, v, delta, width, line, "__shfl_down_sync"); \
  }                                                                                                \
  static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,               \
                                  int line = __builtin_LINE()) {                                   \
    return cutune_emu_shfl<cutune_emu_shfl_xor>(mask, v, (unsigned)lane_mask, width, line,         \
                                                "__shfl_xor_sync");                                \
  }
CUTUNE_EMU_SHUFFLES(int)
CUTUNE_EMU_SHUFFLES(unsigned)
CUTUNE_EMU_SHUFFLES(float)
// Kept defined: device_prelude_ext.h (concatenated after this text) adds the 64-bit types.

// cutune_warp_uniform: on the GPU a broadcast from lane 0 that tells the compiler the value is
// the same in every lane. The contract is that it already is, so the emulator checks that
// rather than broadcasting: a kernel that relies on a value that is not uniform fails here.
static CUTUNE_EMU_UNCHECKED const char* cutune_emu_warp_uniform_run(void* const* lane_args,
                                                                    unsigned) {
  for (unsigned lane = 1; lane < 32; ++lane) {
    if (*(const int*)lane_args[lane] != *(const int*)lane_args[0]) {
      return "the lanes of the warp hold different values: the value is not uniform";
    }
  }
  return nullptr;
}
static inline int cutune_warp_uniform(int v, int line = __builtin_LINE()) {
  cutune_emu_warp_collective(&cutune_emu_warp_uniform_run, "cutune_warp_uniform", &v, ~0u, line);
  return v;
}

// Calls a kernel with its arguments taken from the host's argument array: a pointer
// parameter gets the array entry itself, a scalar one the value the entry points at.
template <class T>
struct cutune_emu_arg {
  static constexpr bool is_pointer = false;
  static T get(void* p) { return *static_cast<const T*>(p); }
};
template <class T>
struct cutune_emu_arg<T*> {
  static constexpr bool is_pointer = true;
  static T* get(void* p) { return static_cast<T*>(p); }
};
template <unsigned... I>
struct cutune_emu_indices {};
template <unsigned N, unsigned... I>
struct cutune_emu_make_indices : cutune_emu_make_indices<N - 1, N - 1, I...> {};
template <unsigned... I>
struct cutune_emu_make_indices<0, I...> {
  typedef cutune_emu_indices<I...> type;
};
template <class... P, unsigned... I>
static inline void cutune_emu_invoke(void (*kernel)(P...), void* const* args,
                                     cutune_emu_indices<I...>) {
  kernel(cutune_emu_arg<P>::get(args[I])...);
}
template <class... P>
static inline void cutune_emu_invoke(void (*kernel)(P...), void* const* args) {
  cutune_emu_invoke(kernel, args, typename cutune_emu_make_indices<sizeof...(P)>::type());
}
template <class... P>
constexpr unsigned cutune_emu_arity(void (*)(P...)) {
  return sizeof...(P);
}
template <unsigned I, class... P>
constexpr bool cutune_emu_param_is_pointer(void (*)(P...)) {
  constexpr bool flags[] = {cutune_emu_arg<P>::is_pointer..., false};
  return flags[I];
}
