#pragma once
// What one TMA 2-D load (cp.async.bulk.tensor.2d, tiled mode) writes to shared memory, and
// which global elements a TMA store writes from it, computed on the host from the emulator's
// tensor-map record (device_abi.h).
//
// The box at coordinates (c0, c1) covers elements x = c0 .. c0 + box[0] - 1 of dimension 0
// and y = c1, c1 + s, ..., below c1 + box[1] of dimension 1 (s = element_strides[1]). It lands
// densely: element (i, j) of the box (i along dimension 0, j the row) at byte offset
// (j * box[0] + i) * element_bytes, and that offset then goes through the map's swizzle
// (smem_swizzle.h). Elements with a coordinate outside [0, dims) (negative ones included) are
// zero. The image is always the whole box: box[0] * rows * element_bytes bytes.

#include <string>
#include <vector>

#include "src/emulator/device_abi.h"

namespace cutune::emu {

// The record for a map over `base` (tests and the emulator's launcher build it this way).
cutune_emu_abi::TensorMapRecord make_tensor_map_record(const void* base, unsigned element_bytes,
                                                       unsigned long long dim0,
                                                       unsigned long long dim1,
                                                       unsigned long long row_stride, unsigned box0,
                                                       unsigned box1, unsigned element_stride1,
                                                       unsigned swizzle);

// Fills `image` with the box's bytes in shared-memory order. Returns "" or why the record
// cannot be copied (not an emulator tensor map, or a malformed one).
std::string tma_box_image(const cutune_emu_abi::TensorMapRecord& map, int c0, int c1,
                          std::vector<unsigned char>& image);

// One element of a TMA store's box that lies inside the map's dimensions: its global address
// and the offset of its bytes in the box's shared image (swizzled as a load's).
struct TmaStoreElement {
  unsigned char* global;
  unsigned long long image_offset;
};
// The in-range elements of the box at (c0, c1) and the image's size in bytes (what the store
// reads from shared memory: the whole box, as a load writes it). Returns "" or why the record
// cannot be copied. Elements outside the dimensions are clipped (not written).
std::string tma_store_elements(const cutune_emu_abi::TensorMapRecord& map, int c0, int c1,
                               std::vector<TmaStoreElement>& elements,
                               unsigned long long& image_bytes);

}  // namespace cutune::emu
