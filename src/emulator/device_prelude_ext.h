// The device prelude, continued: what hand-written CUDA kernels commonly use beyond cutune's
// generated code (votes, the remaining shuffles, atomics, math intrinsics, bit tricks, constant
// memory filled by the host). Concatenated after device_prelude.h (see prelude_text.cc.in);
// the same rules hold: it includes nothing and is never included by host code.

static const int warpSize = 32;

extern "C" int printf(const char*, ...);

// ---- Math: the float and double functions of CUDA's math API that libm has under the same
// name, declared as libm declares them, and the intrinsics as their exact-rounding forms.
extern "C" {
float exp10f(float);
float log10f(float);
float sinhf(float);
float coshf(float);
float tanf(float);
float asinf(float);
float acosf(float);
float atanf(float);
float atan2f(float, float);
float roundf(float);
float truncf(float);
float rintf(float);
float fmodf(float, float);
float copysignf(float, float);
float hypotf(float, float);
float cbrtf(float);
float expm1f(float);
float log1pf(float);
void sincosf(float, float*, float*);
double exp2(double);
double log2(double);
double log10(double);
double pow(double, double);
double sin(double);
double cos(double);
double tan(double);
double tanh(double);
double floor(double);
double ceil(double);
double round(double);
double trunc(double);
double rint(double);
double erf(double);
double cbrt(double);
double hypot(double, double);
double atan2(double, double);
double fmod(double, double);
double copysign(double, double);
}

static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline unsigned long long min(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}
static inline unsigned long long max(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __sinf(float x) { return sinf(x); }
static inline float __cosf(float x) { return cosf(x); }
static inline float __tanf(float x) { return tanf(x); }
static inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
static inline float __log2f(float x) { return log2f(x); }
static inline float __log10f(float x) { return log10f(x); }
static inline float __exp10f(float x) { return exp10f(x); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline int __float2int_rn(float x) { return (int)rintf(x); }  // default mode: nearest even
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned x) { return (float)x; }
static inline long long __double_as_longlong(double d) {
  long long i;
  __builtin_memcpy(&i, &d, 8);
  return i;
}
static inline double __longlong_as_double(long long i) {
  double d;
  __builtin_memcpy(&d, &i, 8);
  return d;
}

// ---- Integer intrinsics.
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll((unsigned long long)x);
}
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
static inline int __mul24(int a, int b) { return (int)((long long)(a << 8 >> 8) * (b << 8 >> 8)); }
static inline unsigned __umul24(unsigned a, unsigned b) {
  return (a & 0xffffffu) * (b & 0xffffffu);
}
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) {
  return (unsigned)(((unsigned long long)a * b) >> 32);
}

// ---- Atomics. Blocks run on several host threads, so these are real atomics on global memory.
template <class T, class F>
static inline T cutune_emu_atomic_update(T* p, F f) {
  T old = *p, next;
  do {
    next = f(old);
  } while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}
static inline double atomicAdd(double* p, double v) {
  return cutune_emu_atomic_update(p, [v](double o) { return o + v; });
}
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline int atomicSub(int* p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
static inline unsigned atomicSub(unsigned* p, unsigned v) {
  return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);
}
static inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
static inline unsigned atomicExch(unsigned* p, unsigned v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
static inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
static inline float atomicExch(float* p, float v) {
  float old;
  __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
  return old;
}
#define CUTUNE_EMU_CAS(T)                                                                       \
  static inline T atomicCAS(T* p, T compare, T value) {                                         \
    __atomic_compare_exchange_n(p, &compare, value, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
    return compare;                                                                             \
  }
CUTUNE_EMU_CAS(int)
CUTUNE_EMU_CAS(unsigned)
CUTUNE_EMU_CAS(unsigned long long)
#undef CUTUNE_EMU_CAS
static inline unsigned atomicMax(unsigned* p, unsigned v) {
  return cutune_emu_atomic_update(p, [v](unsigned o) { return o > v ? o : v; });
}
static inline unsigned atomicMin(unsigned* p, unsigned v) {
  return cutune_emu_atomic_update(p, [v](unsigned o) { return o < v ? o : v; });
}
static inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  return cutune_emu_atomic_update(p, [v](unsigned long long o) { return o > v ? o : v; });
}
static inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  return cutune_emu_atomic_update(p, [v](unsigned long long o) { return o < v ? o : v; });
}
static inline unsigned atomicInc(unsigned* p, unsigned limit) {
  return cutune_emu_atomic_update(p, [limit](unsigned o) { return o >= limit ? 0u : o + 1; });
}
static inline unsigned atomicDec(unsigned* p, unsigned limit) {
  return cutune_emu_atomic_update(
      p, [limit](unsigned o) { return (o == 0 || o > limit) ? limit : o - 1; });
}
#define CUTUNE_EMU_BITWISE(name, builtin)                                                          \
  static inline int name(int* p, int v) { return builtin(p, v, __ATOMIC_RELAXED); }                \
  static inline unsigned name(unsigned* p, unsigned v) { return builtin(p, v, __ATOMIC_RELAXED); } \
  static inline unsigned long long name(unsigned long long* p, unsigned long long v) {             \
    return builtin(p, v, __ATOMIC_RELAXED);                                                        \
  }
CUTUNE_EMU_BITWISE(atomicAnd, __atomic_fetch_and)
CUTUNE_EMU_BITWISE(atomicOr, __atomic_fetch_or)
CUTUNE_EMU_BITWISE(atomicXor, __atomic_fetch_xor)
#undef CUTUNE_EMU_BITWISE
#define atomicAdd_block atomicAdd
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin

// ---- Warp votes, for the lanes in `mask` (warp-collective like the shuffles).
struct cutune_emu_vote_lane {
  int predicate;
  unsigned result;
};
static const char* cutune_emu_ballot_run(void* const* lane_args, unsigned) {
  unsigned bits = 0;
  for (unsigned lane = 0; lane < 32; ++lane) {
    const cutune_emu_vote_lane* l = (const cutune_emu_vote_lane*)lane_args[lane];
    if (l != nullptr && l->predicate != 0) bits |= 1u << lane;
  }
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (lane_args[lane] != nullptr) ((cutune_emu_vote_lane*)lane_args[lane])->result = bits;
  }
  return nullptr;
}
static inline unsigned __ballot_sync(unsigned mask, int predicate, int line = __builtin_LINE()) {
  cutune_emu_vote_lane args{predicate, 0};
  cutune_emu_warp_collective(&cutune_emu_ballot_run, "__ballot_sync", &args, mask, line);
  return args.result;
}
static inline int __all_sync(unsigned mask, int predicate, int line = __builtin_LINE()) {
  return (__ballot_sync(mask, predicate, line) & mask) == mask;
}
static inline int __any_sync(unsigned mask, int predicate, int line = __builtin_LINE()) {
  return (__ballot_sync(mask, predicate, line) & mask) != 0;
}

// ---- __shfl_up_sync, and all shuffles of 64-bit values (PTX shuffles 32 bits; CUDA's 64-bit
// overloads are two shuffles, which gives the same result as moving the value whole).
template <class T>
static const char* cutune_emu_shfl_up_run(void* const* lane_args, unsigned mask) {
  T in[32];
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (lane_args[lane] != nullptr) in[lane] = ((cutune_emu_shfl_lane<T>*)lane_args[lane])->value;
  }
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (lane_args[lane] == nullptr) continue;
    cutune_emu_shfl_lane<T>* l = (cutune_emu_shfl_lane<T>*)lane_args[lane];
    unsigned width = (unsigned)l->width;
    if (width == 0 || width > 32 || (width & (width - 1)) != 0)
      return "width is not a power of two in 1..32";
    unsigned first = lane & ~(width - 1);
    unsigned src = lane >= first + l->operand ? lane - l->operand : lane;
    if ((mask >> src & 1u) == 0) return "a lane reads from a lane outside the mask";
    l->value = in[src];
  }
  return nullptr;
}
#define CUTUNE_EMU_SHFL_UP(T)                                                                    \
  static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,             \
                                 int line = __builtin_LINE()) {                                  \
    cutune_emu_shfl_lane<T> args{v, delta, width};                                               \
    cutune_emu_warp_collective(&cutune_emu_shfl_up_run<T>, "__shfl_up_sync", &args, mask, line); \
    return args.value;                                                                           \
  }
CUTUNE_EMU_SHFL_UP(int)
CUTUNE_EMU_SHFL_UP(unsigned)
CUTUNE_EMU_SHFL_UP(float)
CUTUNE_EMU_SHFL_UP(double)
CUTUNE_EMU_SHFL_UP(long long)
CUTUNE_EMU_SHFL_UP(unsigned long long)
#undef CUTUNE_EMU_SHFL_UP
// The shuffles of device_prelude.h, for the 64-bit types.
CUTUNE_EMU_SHUFFLES(double)
CUTUNE_EMU_SHUFFLES(long long)
CUTUNE_EMU_SHUFFLES(unsigned long long)
#undef CUTUNE_EMU_SHUFFLES

// ---- Constant memory filled by the host (cutune's spec tasks, src/spec): the entry function
// copies each constant argument into its __constant__ symbol once per run. The first thread to
// arrive copies; threads of other host threads wait for it (fibers of its own host thread
// cannot be waiting: they switch only at barriers).
static inline bool cutune_emu_once_begin(int* state) {
  if (__atomic_load_n(state, __ATOMIC_ACQUIRE) == 2) return false;
  int expected = 0;
  if (__atomic_compare_exchange_n(state, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return true;
  while (__atomic_load_n(state, __ATOMIC_ACQUIRE) != 2) {
  }
  return false;
}
static inline void cutune_emu_once_end(int* state) { __atomic_store_n(state, 2, __ATOMIC_RELEASE); }
static inline void cutune_emu_fill_constant(void* symbol, unsigned long long symbol_bytes,
                                            const void* data, unsigned long long bytes,
                                            const char* name) {
  if (bytes > symbol_bytes) {
    cutune_emu_self->fail(cutune_emu_self,
                          "a constant-memory argument is larger than its __constant__ symbol");
  }
  __builtin_memcpy(symbol, data, bytes);
  (void)name;
}
