#include "src/emulator/host_buffer.h"

#include <cstring>

#include "src/emulator/emu_assert.h"

namespace cutune::emu {

namespace {

template <class T>
HostBuffer from_values(ir::Type type, std::span<const T> values) {
  HostBuffer b = HostBuffer::zeros(type, static_cast<int64_t>(values.size()));
  if (!values.empty()) std::memcpy(b.bytes.data(), values.data(), values.size_bytes());
  return b;
}

template <class T>
std::vector<T> to_values(const HostBuffer& b, ir::Type expected) {
  CUTUNE_EMU_ASSERT(b.type == expected, "buffer element type does not match the requested view");
  std::vector<T> out(b.bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), b.bytes.data(), out.size() * sizeof(T));
  return out;
}

template <class T>
ScalarArg scalar(ir::Type type, T v) {
  ScalarArg s;
  s.type = type;
  std::memcpy(s.bits.data(), &v, sizeof(T));
  return s;
}

}  // namespace

HostBuffer HostBuffer::zeros(ir::Type type, int64_t elements) {
  CUTUNE_EMU_ASSERT(elements >= 0, "negative element count");
  HostBuffer b;
  b.type = type;
  b.bytes.resize(static_cast<size_t>(elements) * type.bytes());
  return b;
}

HostBuffer HostBuffer::from_floats(std::span<const float> values) {
  return from_values(ir::Type::f32(), values);
}

HostBuffer HostBuffer::from_ints(std::span<const int32_t> values) {
  return from_values(ir::Type::i32(), values);
}

std::vector<float> HostBuffer::to_floats() const {
  return to_values<float>(*this, ir::Type::f32());
}

std::vector<int32_t> HostBuffer::to_ints() const {
  return to_values<int32_t>(*this, ir::Type::i32());
}

ScalarArg ScalarArg::i32(int32_t v) { return scalar(ir::Type::i32(), v); }
ScalarArg ScalarArg::i64(int64_t v) { return scalar(ir::Type::i64(), v); }
ScalarArg ScalarArg::f32(float v) { return scalar(ir::Type::f32(), v); }

}  // namespace cutune::emu
