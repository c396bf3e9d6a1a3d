#include "src/emulator/tma_copy.h"

#include <cstring>

#include "src/emulator/smem_swizzle.h"

namespace cutune::emu {

cutune_emu_abi::TensorMapRecord make_tensor_map_record(const void* base, unsigned element_bytes,
                                                       unsigned long long dim0,
                                                       unsigned long long dim1,
                                                       unsigned long long row_stride, unsigned box0,
                                                       unsigned box1, unsigned element_stride1,
                                                       unsigned swizzle) {
  cutune_emu_abi::TensorMapRecord r{};
  r.magic = cutune_emu_abi::kTensorMapMagic;
  r.base = base;
  r.dims[0] = dim0;
  r.dims[1] = dim1;
  r.row_stride = row_stride;
  r.box[0] = box0;
  r.box[1] = box1;
  r.element_strides[0] = 1;
  r.element_strides[1] = element_stride1;
  r.element_bytes = element_bytes;
  r.swizzle = swizzle;
  return r;
}

namespace {

// Calls visit(global address, image offset) for each in-range element of the box at (c0, c1);
// sets `image_bytes` to the box image's size. "" or why the record cannot be copied.
template <typename Visit>
std::string each_box_element(const cutune_emu_abi::TensorMapRecord& m, int c0, int c1,
                             unsigned long long& image_bytes, Visit visit) {
  if (m.magic != cutune_emu_abi::kTensorMapMagic) {
    return "the tensor map argument was not built for this kernel (no emulator record)";
  }
  const unsigned eb = m.element_bytes;
  if (eb == 0 || eb > 16 || (eb & (eb - 1)) != 0 || m.box[0] == 0 || m.box[1] == 0 ||
      m.element_strides[1] == 0 || m.swizzle > 3) {
    return "malformed tensor map record";
  }
  const unsigned long long row_bytes = static_cast<unsigned long long>(m.box[0]) * eb;
  if (row_bytes % 16 != 0) return "a box row is not a multiple of 16 bytes";
  if (m.swizzle != 0 && row_bytes != (16ull << m.swizzle)) {
    return "a swizzled box row is not exactly the swizzle span";
  }
  const unsigned rows = (m.box[1] + m.element_strides[1] - 1) / m.element_strides[1];
  image_bytes = row_bytes * rows;
  auto* base = static_cast<unsigned char*>(const_cast<void*>(m.base));
  for (unsigned j = 0; j < rows; ++j) {
    const long long y =
        static_cast<long long>(c1) + static_cast<long long>(j) * m.element_strides[1];
    const bool row_in = y >= 0 && static_cast<unsigned long long>(y) < m.dims[1];
    for (unsigned i = 0; i < m.box[0]; ++i) {
      const long long x = static_cast<long long>(c0) + i;
      if (!row_in || x < 0 || static_cast<unsigned long long>(x) >= m.dims[0]) continue;
      const unsigned long long dense = (j * row_bytes) + static_cast<unsigned long long>(i) * eb;
      visit(base + static_cast<unsigned long long>(y) * m.row_stride +
                static_cast<unsigned long long>(x) * eb,
            cutune_smem::swizzle_offset(m.swizzle, dense));
    }
  }
  return "";
}

}  // namespace

std::string tma_box_image(const cutune_emu_abi::TensorMapRecord& m, int c0, int c1,
                          std::vector<unsigned char>& image) {
  unsigned long long bytes = 0;
  image.clear();
  std::string err = each_box_element(m, c0, c1, bytes,
                                     [&](const unsigned char* global, unsigned long long offset) {
                                       if (image.size() != bytes) image.assign(bytes, 0);
                                       std::memcpy(&image[offset], global, m.element_bytes);
                                     });
  // A box wholly outside the dimensions is all zeros.
  if (err.empty() && image.size() != bytes) image.assign(bytes, 0);
  return err;
}

std::string tma_store_elements(const cutune_emu_abi::TensorMapRecord& m, int c0, int c1,
                               std::vector<TmaStoreElement>& elements,
                               unsigned long long& image_bytes) {
  elements.clear();
  return each_box_element(m, c0, c1, image_bytes,
                          [&](unsigned char* global, unsigned long long offset) {
                            elements.push_back(TmaStoreElement{global, offset});
                          });
}

}  // namespace cutune::emu
