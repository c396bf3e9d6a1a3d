#pragma once
// The shared-memory swizzle of TMA (CU_TENSOR_MAP_SWIZZLE_32B/64B/128B) and, identically, of
// wgmma's matrix descriptors with the same swizzle mode: a pure function of the byte offset.
//
// Shared memory is seen as 16-byte chunks. With a span of S bytes (32, 64 or 128), the chunk
// index within each S-byte row, bits [4, 4 + log2(S/16)) of the offset, is XORed with the same
// number of bits taken from bits [7, 7 + log2(S/16)), which is the index of the 128-byte line
// modulo S/16. So
//   128B: bits 4-6 ^= bits 7-9   (chunk ^= line % 8; the pattern repeats every 1024 bytes)
//    64B: bits 4-5 ^= bits 7-8   (chunk ^= line % 4; repeats every 512 bytes)
//    32B: bit  4   ^= bit  7     (chunk ^= line % 2; repeats every 256 bytes)
// (CUTLASS writes these Swizzle<3,4,3>, <2,4,3>, <1,4,3>.) The hardware applies it to the
// shared-memory address itself, so a swizzled box starts at a multiple of the repeat and the
// offset here is taken from such a base. The map is an involution: applying it twice gives the
// offset back. Bytes within a chunk never move.
//
// Includes nothing and uses only constexpr integer arithmetic, so that device-prelude text can
// use it as well as host code.

namespace cutune_smem {

// 0: none, 1: 32B, 2: 64B, 3: 128B (the CUtensorMapSwizzle and ir::TmaSwizzle numbering).
constexpr unsigned long long swizzle_offset(unsigned mode, unsigned long long offset) {
  if (mode == 0 || mode > 3) return offset;
  const unsigned long long mask = (1ull << mode) - 1;  // 1, 3 or 7 chunks' worth of bits
  return offset ^ (((offset >> 7) & mask) << 4);
}

// The alignment a swizzled region's base needs: 256, 512 or 1024 bytes (16 without swizzle).
constexpr unsigned long long swizzle_repeat_bytes(unsigned mode) {
  return mode == 0 || mode > 3 ? 16 : 128ull << mode;
}

}  // namespace cutune_smem
