#pragma once
// Shapes and fixed configurations for the tensor-core convolution tests.

#include <cstdint>
#include <vector>

namespace cutune::test {

// Small odd conv2d shapes N,C,H,W,K,R,S,stride,pad[,dilation]: stride 2, padding, 1x1 / 3x3 /
// 7x7 filters, channel counts no tile divides, batch 2.
inline const std::vector<int64_t> kConv7x7 = {2, 3, 11, 9, 10, 7, 7, 2, 3};  // C1-like
inline const std::vector<int64_t> kConv3x3 = {2, 12, 9, 7, 20, 3, 3, 1, 1};  // 8-byte copies
inline const std::vector<int64_t> kConv1x1 = {2, 24, 7, 9, 40, 1, 1, 2, 0};  // 16-byte copies
inline const std::vector<int64_t> kConvDilated = {2, 6, 12, 11, 36, 3, 3, 2, 2, 2};
inline const std::vector<int64_t> kConvOddK = {2, 8, 7, 7, 33, 3, 3, 1, 1};  // K odd
inline const std::vector<int64_t> kConvPadded = {2, 16, 9, 7, 40, 3, 3, 1, 1};

// Element copies and per-lane fragments everywhere, no pipelining beyond two stages.
inline const char* kConvScalar =
    R"({"knobs":{"block_m":32,"block_n":32,"block_k":16,"warp_m":16,"warp_n":16,"stages":2,)"
    R"("smem_layout":0,"copy_bytes":2,"ldmatrix":0,"raster_group":1,"split_k":1,)"
    R"("epilogue_vec":1}})";
// 16-byte cp.async, swizzle, ldmatrix, 3 stages, grouped blocks, paired stores.
inline const char* kConvFull =
    R"({"knobs":{"block_m":64,"block_n":64,"block_k":32,"warp_m":32,"warp_n":32,"stages":3,)"
    R"("smem_layout":2,"copy_bytes":16,"ldmatrix":1,"raster_group":4,"split_k":1,)"
    R"("epilogue_vec":2}})";
// The same with split-K (scalar atomic stores into fp32 output).
inline const char* kConvSplitK =
    R"({"knobs":{"block_m":64,"block_n":32,"block_k":32,"warp_m":32,"warp_n":16,"stages":4,)"
    R"("smem_layout":1,"copy_bytes":16,"ldmatrix":1,"raster_group":1,"split_k":4,)"
    R"("epilogue_vec":1}})";

}  // namespace cutune::test
