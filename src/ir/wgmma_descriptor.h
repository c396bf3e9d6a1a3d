#pragma once
// The 64-bit shared-memory matrix descriptor of Hopper's wgmma.mma_async (PTX ISA, "Matrix
// Descriptor Format") and the canonical layouts it describes ("Shared Memory Matrix Layout"),
// for 16-bit operands. One text, compiled three ways: by host code (tests, templates), inside
// the CPU emulator's device prelude (which decodes descriptors into addresses), and by NVRTC
// inside the generated CUDA (which encodes them). Hence it includes nothing and uses only
// plain C++ that all three accept (the CUDA build passes -default-device).
//
// Bits: 0-13 start address, 16-29 leading byte offset, 32-45 stride byte offset (each
// (x & 0x3FFFF) >> 4), 49-51 base offset, 62-63 swizzle (0 none, 1 128 B, 2 64 B, 3 32 B).
//
// Layouts, in bytes from the start address, of element (mn, k) of an operand tile (mn along M
// for A or N for B, k along K; 16-bit elements; T = the swizzle width in bytes):
//   K-major,  no swizzle: (mn/8)*SBO + (mn%8)*16 + (k/8)*LBO + (k%8)*2
//   K-major,  swizzled:   (mn/8)*SBO + (mn%8)*T  + k*2            (LBO unused)
//   MN-major, no swizzle: (mn/8)*SBO + (mn%8)*2  + (k/8)*LBO + (k%8)*16
//   MN-major, swizzled:   (mn/(T/2))*LBO + (mn%(T/2))*2 + (k/8)*SBO + (k%8)*T
// A swizzle then XORs the 16-byte-chunk bits 4.. of the shared address with its 128-byte-row
// bits 7..: 1 bit for 32 B (pattern of 256 B), 2 for 64 B (512 B), 3 for 128 B (1024 B). The
// row bits are taken from the address less the base offset (in 128-byte rows), so that a
// pattern starting off its natural boundary is described by base = (pattern start >> 7) & 7.

inline constexpr unsigned kCutuneWgmmaSwizzleNone = 0;
inline constexpr unsigned kCutuneWgmmaSwizzle128 = 1;
inline constexpr unsigned kCutuneWgmmaSwizzle64 = 2;
inline constexpr unsigned kCutuneWgmmaSwizzle32 = 3;

inline constexpr unsigned long long cutune_wgmma_desc_field(unsigned bytes) {
  return (unsigned long long)((bytes & 0x3FFFFu) >> 4);
}

inline constexpr unsigned long long cutune_wgmma_desc_encode(unsigned shared_address,
                                                             unsigned leading_bytes,
                                                             unsigned stride_bytes,
                                                             unsigned base_offset,
                                                             unsigned swizzle) {
  return cutune_wgmma_desc_field(shared_address) | cutune_wgmma_desc_field(leading_bytes) << 16 |
         cutune_wgmma_desc_field(stride_bytes) << 32 |
         (unsigned long long)(base_offset & 7u) << 49 | (unsigned long long)(swizzle & 3u) << 62;
}

inline constexpr unsigned cutune_wgmma_desc_start(unsigned long long d) {
  return (unsigned)(d & 0x3FFFu) << 4;
}
inline constexpr unsigned cutune_wgmma_desc_leading(unsigned long long d) {
  return (unsigned)(d >> 16 & 0x3FFFu) << 4;
}
inline constexpr unsigned cutune_wgmma_desc_stride(unsigned long long d) {
  return (unsigned)(d >> 32 & 0x3FFFu) << 4;
}
inline constexpr unsigned cutune_wgmma_desc_base(unsigned long long d) {
  return (unsigned)(d >> 49 & 7u);
}
inline constexpr unsigned cutune_wgmma_desc_swizzle(unsigned long long d) {
  return (unsigned)(d >> 62 & 3u);
}

// The swizzle width T in bytes of a swizzle code (0 for none).
inline constexpr unsigned cutune_wgmma_swizzle_bytes(unsigned swizzle) {
  return swizzle == kCutuneWgmmaSwizzle128  ? 128u
         : swizzle == kCutuneWgmmaSwizzle64 ? 64u
         : swizzle == kCutuneWgmmaSwizzle32 ? 32u
                                            : 0u;
}

// The swizzle applied to a shared address: chunk bits 4.. ^= row bits 7.. (less the base).
inline constexpr unsigned cutune_wgmma_swizzle_address(unsigned address, unsigned swizzle,
                                                       unsigned base_offset) {
  const unsigned width = cutune_wgmma_swizzle_bytes(swizzle);
  if (width == 0) return address;
  const unsigned mask = width / 16 - 1;  // 1, 3 or 7
  const unsigned row = ((address >> 7) - base_offset) & mask;
  return address ^ (row << 4);
}

// The shared address of 16-bit element (mn, k) of the operand a descriptor describes.
inline constexpr unsigned cutune_wgmma_element_address(unsigned long long d, bool mn_major,
                                                       unsigned mn, unsigned k) {
  const unsigned width = cutune_wgmma_swizzle_bytes(cutune_wgmma_desc_swizzle(d));
  const unsigned lbo = cutune_wgmma_desc_leading(d), sbo = cutune_wgmma_desc_stride(d);
  unsigned offset = 0;
  if (!mn_major && width == 0) {
    offset = mn / 8 * sbo + mn % 8 * 16 + k / 8 * lbo + k % 8 * 2;
  } else if (!mn_major) {
    offset = mn / 8 * sbo + mn % 8 * width + k * 2;
  } else if (width == 0) {
    offset = mn / 8 * sbo + mn % 8 * 2 + k / 8 * lbo + k % 8 * 16;
  } else {
    const unsigned per_row = width / 2;
    offset = mn / per_row * lbo + mn % per_row * 2 + k / 8 * sbo + k % 8 * width;
  }
  return cutune_wgmma_swizzle_address(cutune_wgmma_desc_start(d) + offset,
                                      cutune_wgmma_desc_swizzle(d), cutune_wgmma_desc_base(d));
}
