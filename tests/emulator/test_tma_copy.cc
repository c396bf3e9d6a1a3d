// The shared-memory image of one TMA 2-D load (src/emulator/tma_copy.h), checked element by
// element against the cuTensorMapEncodeTiled / cp.async.bulk.tensor definitions: the box at
// (c0, c1), rows stepped by the element stride, out-of-bounds elements zero, the dense box
// laid out row after row and then swizzled.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "src/emulator/tma_copy.h"

using cutune::emu::make_tensor_map_record;
using cutune::emu::tma_box_image;

namespace {

// A W x H global array of uint16 with a pitch of P elements; element (x, y) = 1 + x + 1000 y.
struct Global {
  int w, h, pitch;
  std::vector<uint16_t> data;
  Global(int w_, int h_, int p_) : w(w_), h(h_), pitch(p_), data(size_t(p_) * h_, 0xdead) {
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) data[size_t(y) * pitch + x] = uint16_t(1 + x + 1000 * y);
  }
  uint16_t at(long long x, long long y) const {
    if (x < 0 || y < 0 || x >= w || y >= h) return 0;
    return data[size_t(y) * pitch + size_t(x)];
  }
};

uint16_t element(const std::vector<unsigned char>& image, size_t offset) {
  uint16_t v;
  std::memcpy(&v, &image[offset], 2);
  return v;
}

// The swizzled byte offset written out per mode: chunk ^ (line % span/16).
size_t swizzled(unsigned mode, size_t offset) {
  if (mode == 0) return offset;
  size_t chunks = size_t{1} << mode;
  size_t chunk = offset / 16 % chunks, line = offset / 128;
  return offset - chunk * 16 + ((chunk ^ (line % chunks)) * 16);
}

void check_box(const Global& g, unsigned box0, unsigned box1, unsigned stride1, unsigned mode,
               int c0, int c1) {
  auto rec = make_tensor_map_record(g.data.data(), 2, unsigned(g.w), unsigned(g.h),
                                    unsigned(g.pitch) * 2, box0, box1, stride1, mode);
  std::vector<unsigned char> image;
  REQUIRE(tma_box_image(rec, c0, c1, image).empty());
  const unsigned rows = (box1 + stride1 - 1) / stride1;
  REQUIRE(image.size() == size_t{box0} * rows * 2);
  for (unsigned j = 0; j < rows; ++j) {
    for (unsigned i = 0; i < box0; ++i) {
      INFO("box " << box0 << "x" << box1 << " stride " << stride1 << " swizzle " << mode << " at ("
                  << c0 << "," << c1 << "): element " << i << " of row " << j);
      CHECK(element(image, swizzled(mode, (size_t{j} * box0 + i) * 2)) ==
            g.at(c0 + (long long)i, c1 + (long long)j * stride1));
    }
  }
}

}  // namespace

TEST_CASE("a TMA box copies its window, zero outside the tensor, on odd shapes", "[tma]") {
  Global g(37, 29, 40);               // 37 x 29 elements, 80-byte pitch
  check_box(g, 16, 8, 1, 0, 0, 0);    // inside
  check_box(g, 16, 8, 1, 0, 30, 25);  // past the right and bottom edges
  check_box(g, 24, 5, 1, 0, -9, -3);  // negative coordinates: the leading part is zero
  check_box(g, 8, 256, 1, 0, 33, 0);  // a box taller than the tensor
  check_box(g, 16, 7, 3, 0, 2, 1);    // element stride 3: rows 1, 4, 7 (3 rows)
  check_box(g, 16, 7, 3, 0, 2, 24);   // the strided rows run out of the tensor
}

TEST_CASE("a TMA box lands swizzled for each swizzle mode", "[tma]") {
  Global g(100, 21, 104);
  check_box(g, 16, 12, 1, 1, 3, 2);    // 32-byte rows, 32B swizzle
  check_box(g, 32, 12, 1, 2, 70, 15);  // 64-byte rows, 64B swizzle, partly out of bounds
  check_box(g, 64, 16, 1, 3, 50, -4);  // 128-byte rows, 128B swizzle
  check_box(g, 64, 9, 2, 3, 0, 3);     // with an element stride
}

TEST_CASE("a TMA box of 4-byte elements keeps each element whole", "[tma]") {
  std::vector<float> a(16 * 8);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i) + 0.5f;
  auto rec = make_tensor_map_record(a.data(), 4, 13, 7, 13 * 4 + 12, 32, 8, 1, 3);
  std::vector<unsigned char> image;
  REQUIRE(tma_box_image(rec, 0, 0, image).empty());
  for (unsigned j = 0; j < 8; ++j) {
    for (unsigned i = 0; i < 32; ++i) {
      float v;
      std::memcpy(&v, &image[swizzled(3, (j * 32 + i) * 4)], 4);
      float want = (i < 13 && j < 7) ? a[j * 16 + i] : 0.0f;  // pitch 16 floats
      CHECK(v == want);
    }
  }
}

TEST_CASE("malformed tensor map records are refused", "[tma]") {
  uint16_t x[64] = {};
  std::vector<unsigned char> image;
  auto rec = make_tensor_map_record(x, 2, 8, 8, 16, 8, 8, 1, 0);
  rec.magic = 0;
  CHECK(tma_box_image(rec, 0, 0, image).find("no emulator record") != std::string::npos);
  rec = make_tensor_map_record(x, 2, 8, 8, 16, 4, 8, 1, 0);  // 8-byte rows
  CHECK(tma_box_image(rec, 0, 0, image).find("multiple of 16") != std::string::npos);
  rec = make_tensor_map_record(x, 2, 8, 8, 16, 16, 8, 1, 3);  // 32-byte rows, 128B swizzle
  CHECK(tma_box_image(rec, 0, 0, image).find("swizzle span") != std::string::npos);
}

TEST_CASE(
    "a TMA store writes the in-range elements of its box from the swizzled image, "
    "clipping the rest",
    "[tma]") {
  // A 37 x 29 tensor (80-byte pitch); 64 x 16 boxes with the 128-byte swizzle past the right
  // and bottom edges, and before the left and top ones.
  Global g(37, 29, 40);
  auto rec = make_tensor_map_record(g.data.data(), 2, 37, 29, 80, 64, 16, 1, 3);
  for (auto [c0, c1] : {std::pair{0, 0}, std::pair{20, 20}, std::pair{-30, -5}}) {
    std::vector<cutune::emu::TmaStoreElement> elements;
    unsigned long long bytes = 0;
    REQUIRE(cutune::emu::tma_store_elements(rec, c0, c1, elements, bytes).empty());
    CHECK(bytes == 64 * 16 * 2);
    size_t expected = 0;
    for (int j = 0; j < 16; ++j)
      for (int i = 0; i < 64; ++i) expected += g.at(c0 + i, c1 + j) != 0;
    CHECK(elements.size() == expected);
    for (const cutune::emu::TmaStoreElement& e : elements) {
      // Each element's image offset is where a load of the same box puts it.
      const auto index = size_t(reinterpret_cast<uint16_t*>(e.global) - g.data.data());
      const int x = int(index % 40), y = int(index / 40);
      INFO("box at (" << c0 << "," << c1 << "): element (" << x << "," << y << ")");
      REQUIRE(x < 37);
      const size_t dense = (size_t(y - c1) * 64 + size_t(x - c0)) * 2;
      CHECK(e.image_offset == swizzled(3, dense));
    }
  }
  // A box wholly outside writes nothing (and a load of it is all zeros).
  std::vector<cutune::emu::TmaStoreElement> elements;
  unsigned long long bytes = 0;
  REQUIRE(cutune::emu::tma_store_elements(rec, 64, 0, elements, bytes).empty());
  CHECK(elements.empty());
  std::vector<unsigned char> image;
  REQUIRE(tma_box_image(rec, 64, 0, image).empty());
  CHECK(image == std::vector<unsigned char>(bytes, 0));
}
