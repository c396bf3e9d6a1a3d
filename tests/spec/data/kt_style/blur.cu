// A row blur written the way Kernel Tuner users write kernels (kept back from cutune's own
// examples to test that it runs unchanged):
//   out[y][x] = SCALE * sum_{k=-RADIUS..RADIUS} in[y][x + k + RADIUS] * weights[k + RADIUS]
// - fallback values for the tunable parameters under `#ifndef kernel_tuner`, which Kernel Tuner
//   defines (to 1) with the parameters;
// - C++ linkage (no extern "C");
// - the weights in constant memory, and passed as a parameter too (Kernel Tuner does both);
// - RADIUS and tap() from a header beside this file, SCALE from the spec's CompilerOptions;
// - each thread computes tile_size_x outputs of a row, strided by the block, so the spec's
//   GridDivX is the product block_size_x * tile_size_x.
#include "blur_weights.h"

#ifndef kernel_tuner
#define block_size_x 16
#define block_size_y 16
#define tile_size_x 8
#endif

__constant__ float weights[2 * RADIUS + 1];

__global__ void blur_rows(float* out, const float* in, const float* weights_again, int width,
                          int height) {
  const int y = blockIdx.y * block_size_y + threadIdx.y;
  const int x0 = blockIdx.x * block_size_x * tile_size_x + threadIdx.x;
  if (y >= height) return;
#pragma unroll
  for (int t = 0; t < tile_size_x; ++t) {
    const int x = x0 + t * block_size_x;
    if (x >= width) continue;
    float sum = 0.0f;
    for (int k = 0; k <= 2 * RADIUS; ++k) sum += tap(in[y * (width + 2 * RADIUS) + x + k], weights[k]);
#if defined(PLANTED_BUG)
    // A wrong result only where a thread has three outputs: the last tap is dropped.
    if (tile_size_x == 3) sum -= tap(in[y * (width + 2 * RADIUS) + x + 2 * RADIUS], weights[2 * RADIUS]);
#endif
    out[y * width + x] = SCALE * sum;
  }
}
