#pragma once
// The argument values of a spec task: allocated and filled as the spec says (constant, uniform
// random from a fixed seed, or a raw file), held as raw bytes of the argument's element type,
// and read back as numbers for the comparison with a reference.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/spec/kernel_spec.h"

namespace cutune::spec {

struct ArgData {
  ElemType type = ElemType::f32;
  std::vector<std::byte> bytes;  // elements * elem_bytes(type)

  int64_t elements() const { return static_cast<int64_t>(bytes.size()) / elem_bytes(type); }
  // The elements as floats (doubles and 64-bit integers rounded), for compare_outputs.
  std::vector<float> to_floats() const;
};

// The emulator carries buffers by size only: an ir::Type of the element's width.
ir::Type storage_type(ElemType t);
KernelParam kernel_param(const SpecArgument& a, int64_t elements);

// Argument `index` of `elements` elements. Random values are fill_input(seed, index) of
// src/measure/correctness.h mapped to [0, FillValue) (integers: rounded down), so every run
// and every machine sees the same inputs. SpecError for a raw file of the wrong size.
ArgData make_argument(const SpecArgument& a, int index, int64_t elements, double fill_value,
                      uint64_t seed);

// Reads a raw file of `type` elements; SpecError if its size is not `elements` of them.
ArgData read_raw(const std::filesystem::path& path, ElemType type, int64_t elements,
                 const std::string& field);

}  // namespace cutune::spec
