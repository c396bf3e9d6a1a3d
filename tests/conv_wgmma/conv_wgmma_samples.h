#pragma once
// Shapes and fixed configurations for the warpgroup-MMA convolution tests (kernels/
// conv2d_wgmma.h). The emulator runs a block's 128 or 256 threads as fibers, so the emulated
// shapes keep N·P·Q and K to a few hundred.

#include <cstdint>
#include <vector>

namespace cutune::test {

// Conv2d shapes N,C,H,W,K,R,S,stride,pad[,dilation] -> the GEMM's M = N·P·Q, N = K, K = R·S·C.
// Where C is a multiple of block_k (C = 32 or 64 here) a K slice lies in one filter tap, which
// the gather takes from the slice's start (conv_gather_source's tap_slice); elsewhere each copy
// decomposes its own column.
inline const std::vector<int64_t> kWgStrided = {2, 16, 13, 11, 40, 3, 3, 2, 1};  // 84 x 40 x 144
inline const std::vector<int64_t> kWgWide = {3, 32, 10, 10, 136, 3, 3, 1, 1};    // 300 x 136 x 288
inline const std::vector<int64_t> kWgDilated = {2, 32, 12, 11, 36, 3, 3, 2, 2, 2};  // 72 x 36 x 288
inline const std::vector<int64_t> kWg1x1 = {2, 24, 7, 9, 40, 1, 1, 2, 0};           // 40 x 40 x 24
inline const std::vector<int64_t> kWgOddK = {2, 8, 7, 7, 33, 3, 3, 1, 1};           // 98 x 33 x 72
inline const std::vector<int64_t> kWg3x3 = {2, 12, 9, 7, 20, 3, 3, 1, 1};        // 126 x 20 x 108
inline const std::vector<int64_t> kWg7x7 = {2, 3, 11, 9, 10, 7, 7, 2, 3};        // 60 x 10 x 147
inline const std::vector<int64_t> kWgFewPixels = {1, 32, 5, 5, 72, 3, 3, 2, 1};  // 9 x 72 x 288
inline const std::vector<int64_t> kWgK64 = {2, 64, 8, 8, 64, 3, 3, 1, 1};        // 128 x 64 x 576

// One warpgroup, 64x64x64, 128-byte swizzle, 16-byte cp.async, paired stores.
inline const char* kWgSmall =
    R"({"knobs":{"block_m":64,"block_n":64,"block_k":64,"stages":3,"warpgroups":1,)"
    R"("swizzle":128,"copy_bytes":16,"raster_group":1,"split_k":1,"epilogue":1}})";

}  // namespace cutune::test
