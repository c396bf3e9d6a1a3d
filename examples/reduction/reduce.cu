// A tunable sum of n floats into out[0] (which must start at zero): each block reduces a
// grid-strided share of the input, then adds its total with one atomic.
//
// Tuning parameters:
//   block_size_x   threads per block (a multiple of 32)
//   grid_blocks    blocks at most (the grid-stride loop covers the rest)
//   vector_width   elements per load (1, 2 or 4: float, float2, float4)
//   use_shuffle    reduce within warps with __shfl_down_sync, else a shared-memory tree in
//                  dynamic shared memory of block_size_x floats

extern __shared__ float partial[];

template <int kWidth>
struct Vec;
template <>
struct Vec<1> {
  static __device__ __forceinline__ float load_sum(const float* p, int i) { return __ldg(p + i); }
};
template <>
struct Vec<2> {
  static __device__ __forceinline__ float load_sum(const float* p, int i) {
    const float2 v = __ldg(reinterpret_cast<const float2*>(p) + i);
    return v.x + v.y;
  }
};
template <>
struct Vec<4> {
  static __device__ __forceinline__ float load_sum(const float* p, int i) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p) + i);
    return (v.x + v.y) + (v.z + v.w);
  }
};

extern "C" __global__ void reduce_sum(float* out, const float* __restrict__ in, int n) {
  const int tid = threadIdx.x;
  const int stride = gridDim.x * block_size_x;
  const int vectors = n / vector_width;
  float sum = 0.0f;
  for (int i = blockIdx.x * block_size_x + tid; i < vectors; i += stride) sum += Vec<vector_width>::load_sum(in, i);
  // The tail that does not fill a vector.
  for (int i = vectors * vector_width + blockIdx.x * block_size_x + tid; i < n; i += stride) sum += in[i];

#if use_shuffle
  __shared__ float warp_sums[block_size_x / 32];
  const int lane = tid % 32;
  const int warp = tid / 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < block_size_x / 32 ? warp_sums[lane] : 0.0f;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  }
#else
  partial[tid] = sum;
  __syncthreads();
#pragma unroll
  for (int s = block_size_x / 2; s > 0; s /= 2) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  sum = partial[0];
#endif
  if (tid == 0) atomicAdd(out, sum);
}
