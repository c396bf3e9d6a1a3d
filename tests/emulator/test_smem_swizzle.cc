// The shared-memory swizzle (src/emulator/smem_swizzle.h) against the patterns of the CUDA
// driver's CUtensorMapSwizzle ("swizzle 16B chunks within a 32/64/128B span") written out as
// chunk ^ (128-byte line mod span/16).
#include <catch2/catch.hpp>

#include <set>

#include "src/emulator/smem_swizzle.h"

using cutune_smem::swizzle_offset;
using cutune_smem::swizzle_repeat_bytes;

namespace {

// The same mapping spelled by chunk and line rather than by bits.
unsigned long long by_chunks(unsigned mode, unsigned long long offset) {
  if (mode == 0) return offset;
  const unsigned long long chunks = 2ull << (mode - 1);  // 16-byte chunks per span: 2, 4, 8
  const unsigned long long span = 16 * chunks;
  const unsigned long long line = offset / 128;
  const unsigned long long chunk = offset / 16 % chunks;
  return offset / span * span + ((chunk ^ (line % chunks)) * 16) + offset % 16;
}

}  // namespace

TEST_CASE("128B swizzle: the chunk of a 128-byte row is XORed with the row mod 8", "[swizzle]") {
  // Row 0 is unchanged; row 1's chunk 0 goes to chunk 1; row 7's chunk 0 to chunk 7.
  CHECK(swizzle_offset(3, 0) == 0);
  CHECK(swizzle_offset(3, 16) == 16);
  CHECK(swizzle_offset(3, 128 + 0) == 128 + 16);
  CHECK(swizzle_offset(3, 128 + 16) == 128 + 0);
  CHECK(swizzle_offset(3, 7 * 128 + 0) == 7 * 128 + 7 * 16);
  CHECK(swizzle_offset(3, 7 * 128 + 5 * 16 + 6) == 7 * 128 + 2 * 16 + 6);  // 5 ^ 7 = 2
  CHECK(swizzle_offset(3, 8 * 128 + 3 * 16) == 8 * 128 + 3 * 16);          // repeats at 1024
  CHECK(swizzle_repeat_bytes(3) == 1024);
}

TEST_CASE("64B and 32B swizzles use the 128-byte line mod 4 and mod 2", "[swizzle]") {
  // 64B: rows of 64 bytes, two per 128-byte line; line 1 (rows 2, 3) swaps chunks 0 and 1.
  CHECK(swizzle_offset(2, 64) == 64);                          // row 1, line 0
  CHECK(swizzle_offset(2, 128) == 128 + 16);                   // row 2, line 1
  CHECK(swizzle_offset(2, 3 * 128 + 16) == 3 * 128 + 2 * 16);  // 1 ^ 3 = 2
  CHECK(swizzle_offset(2, 4 * 128) == 4 * 128);                // repeats at 512
  CHECK(swizzle_repeat_bytes(2) == 512);
  // 32B: line 1 swaps the two chunks of each 32-byte row.
  CHECK(swizzle_offset(1, 32) == 32);
  CHECK(swizzle_offset(1, 128) == 128 + 16);
  CHECK(swizzle_offset(1, 128 + 32 + 16) == 128 + 32);
  CHECK(swizzle_offset(1, 256) == 256);
  CHECK(swizzle_repeat_bytes(1) == 256);
  CHECK(swizzle_offset(0, 12345) == 12345);
}

TEST_CASE("every swizzle is an involution that permutes 16-byte chunks within spans", "[swizzle]") {
  for (unsigned mode = 0; mode <= 3; ++mode) {
    const unsigned long long repeat = swizzle_repeat_bytes(mode == 0 ? 3 : mode);
    std::set<unsigned long long> images;
    for (unsigned long long o = 0; o < 2 * repeat; ++o) {
      const unsigned long long s = swizzle_offset(mode, o);
      INFO("mode " << mode << " offset " << o);
      CHECK(s == by_chunks(mode, o));
      CHECK(swizzle_offset(mode, s) == o);
      CHECK(s % 16 == o % 16);
      if (mode != 0) CHECK(s / (16u << mode) == o / (16u << mode));  // stays in its span
      images.insert(s);
    }
    CHECK(images.size() == 2 * repeat);
  }
}
