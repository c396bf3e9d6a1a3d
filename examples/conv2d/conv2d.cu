// A tunable 2-D convolution ("valid" correlation) of a width x height output with a
// filter_width x filter_height filter held in constant memory:
//   output[y][x] = sum_{i, j} input[y + i][x + j] * d_filter[i][j]
// The input is (width + filter_width - 1) x (height + filter_height - 1), row-major.
//
// Tuning parameters (preprocessor defines set by the tuner):
//   block_size_x, block_size_y  threads per block
//   tile_size_x, tile_size_y    outputs per thread, strided by the block size so that a
//                               warp's loads stay contiguous
//   use_shmem                   stage the block's input window in shared memory
//   use_padding                 pad each shared-memory row by one float (bank conflicts)
//   read_only                   read global memory through the read-only cache (__ldg)
//   filter_width, filter_height the filter's size (fixed per problem)

#if read_only
#define LOAD(ref) __ldg(&(ref))
#else
#define LOAD(ref) (ref)
#endif

__constant__ float d_filter[filter_height * filter_width];

extern "C" __global__ void __launch_bounds__(block_size_x * block_size_y)
conv2d(float* __restrict__ output, const float* __restrict__ input,
       const float* __restrict__ /*filter: read from d_filter*/, int width, int height) {
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int x0 = blockIdx.x * block_size_x * tile_size_x;
  const int y0 = blockIdx.y * block_size_y * tile_size_y;
  const int in_width = width + filter_width - 1;
  const int in_height = height + filter_height - 1;

#if use_shmem
  constexpr int kWindowW = block_size_x * tile_size_x + filter_width - 1;
  constexpr int kWindowH = block_size_y * tile_size_y + filter_height - 1;
  constexpr int kStride = kWindowW + use_padding;
  __shared__ float window[kWindowH * kStride];
  for (int i = ty; i < kWindowH; i += block_size_y) {
    for (int j = tx; j < kWindowW; j += block_size_x) {
      const int gy = y0 + i;
      const int gx = x0 + j;
      window[i * kStride + j] = (gy < in_height && gx < in_width) ? LOAD(input[gy * in_width + gx]) : 0.0f;
    }
  }
  __syncthreads();
#endif

  float acc[tile_size_y][tile_size_x];
#pragma unroll
  for (int ti = 0; ti < tile_size_y; ++ti)
#pragma unroll
    for (int tj = 0; tj < tile_size_x; ++tj) acc[ti][tj] = 0.0f;

  for (int i = 0; i < filter_height; ++i) {
#pragma unroll
    for (int j = 0; j < filter_width; ++j) {
      const float w = d_filter[i * filter_width + j];
#pragma unroll
      for (int ti = 0; ti < tile_size_y; ++ti) {
#pragma unroll
        for (int tj = 0; tj < tile_size_x; ++tj) {
          const int ly = ty + ti * block_size_y;
          const int lx = tx + tj * block_size_x;
#if use_shmem
          acc[ti][tj] += window[(ly + i) * kStride + lx + j] * w;
#else
          const int gy = y0 + ly + i;
          const int gx = x0 + lx + j;
          if (y0 + ly < height && x0 + lx < width) acc[ti][tj] += LOAD(input[gy * in_width + gx]) * w;
#endif
        }
      }
    }
  }

#pragma unroll
  for (int ti = 0; ti < tile_size_y; ++ti) {
#pragma unroll
    for (int tj = 0; tj < tile_size_x; ++tj) {
      const int y = y0 + ty + ti * block_size_y;
      const int x = x0 + tx + tj * block_size_x;
      if (y < height && x < width) output[y * width + x] = acc[ti][tj];
    }
  }
}
