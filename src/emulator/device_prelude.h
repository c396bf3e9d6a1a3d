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
#define __shared__ thread_local

#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define FLT_MAX __FLT_MAX__

typedef cutune_emu_abi::Dim3 uint3;
typedef cutune_emu_abi::Dim3 dim3;

static thread_local cutune_emu_abi::Thread* cutune_emu_self = nullptr;

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

struct __attribute__((aligned(8))) float2 { float x, y; };
struct float3 { float x, y, z; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(8))) int2 { int x, y; };
struct int3 { int x, y, z; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };

static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return int2{x, y}; }
static inline int3 make_int3(int x, int y, int z) { return int3{x, y, z}; }
static inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }

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
static inline T __ldg(const T* p) { return *p; }

static inline int __float_as_int(float f) { int i; __builtin_memcpy(&i, &f, 4); return i; }
static inline unsigned __float_as_uint(float f) { unsigned u; __builtin_memcpy(&u, &f, 4); return u; }
static inline float __int_as_float(int i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline float __uint_as_float(unsigned u) { float f; __builtin_memcpy(&f, &u, 4); return f; }

// Blocks run concurrently on several host threads, so these must be real atomics.
static inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned atomicAdd(unsigned* p, unsigned v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline float atomicAdd(float* p, float v) {
  float old = *p, next;
  do {
    next = old + v;
  } while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}
static inline int atomicMax(int* p, int v) {
  int old = *p;
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED)) {
  }
  return old;
}
static inline int atomicMin(int* p, int v) {
  int old = *p;
  while (old > v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED)) {
  }
  return old;
}

// Warp-level intrinsics (__shfl_sync, __shfl_xor_sync, __ballot_sync, __syncwarp) and the
// mma / ldmatrix family belong here. They need a warp-scoped barrier in the scheduler (the
// 32 fibers of a warp meet, exchange values through the block's records, and go on), the
// way __syncthreads is a block-scoped one; until then a kernel using them fails to compile.

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
constexpr unsigned cutune_emu_arity(void (*)(P...)) { return sizeof...(P); }
template <unsigned I, class... P>
constexpr bool cutune_emu_param_is_pointer(void (*)(P...)) {
  constexpr bool flags[] = {cutune_emu_arg<P>::is_pointer..., false};
  return flags[I];
}
