#pragma once
// Host-side values for the arguments of an emulated kernel launch.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "src/ir/type.h"

namespace cutune::emu {

// The contents of one global buffer: `bytes.size()` is a whole number of `type.bytes()`
// elements. Matches a pointer parameter of the kernel (same element type and count).
struct HostBuffer {
  ir::Type type = ir::Type::f32();
  std::vector<std::byte> bytes;

  int64_t elements() const { return static_cast<int64_t>(bytes.size()) / type.bytes(); }

  static HostBuffer zeros(ir::Type type, int64_t elements);
  static HostBuffer from_floats(std::span<const float> values);
  static HostBuffer from_ints(std::span<const int32_t> values);
  // The elements as host values; the type must be Float32 (resp. Int32) with one lane.
  std::vector<float> to_floats() const;
  std::vector<int32_t> to_ints() const;
};

// The value of one scalar (by-value) kernel parameter, stored in the parameter's own
// representation.
struct ScalarArg {
  ir::Type type = ir::Type::i32();
  alignas(8) std::array<std::byte, 8> bits{};

  static ScalarArg i32(int32_t v);
  static ScalarArg i64(int64_t v);
  static ScalarArg f32(float v);
};

}  // namespace cutune::emu
