#include "src/spec/spec_buffers.h"

#include <cmath>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "src/measure/correctness.h"
#include "src/measure/emulated_check.h"

namespace cutune::spec {

namespace {

template <class T>
void put(std::vector<std::byte>& bytes, int64_t i, T v) {
  std::memcpy(bytes.data() + i * int64_t(sizeof(T)), &v, sizeof(T));
}

template <class T>
T get(const std::vector<std::byte>& bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * int64_t(sizeof(T)), sizeof(T));
  return v;
}

void store(ArgData& d, int64_t i, double v) {
  switch (d.type) {
    case ElemType::f16:
      put(d.bytes, i, half_bits(float(v)));
      break;
    case ElemType::bf16:
      put(d.bytes, i, bfloat16_bits(float(v)));
      break;
    case ElemType::f32:
      put(d.bytes, i, float(v));
      break;
    case ElemType::f64:
      put(d.bytes, i, v);
      break;
    case ElemType::i8:
      put(d.bytes, i, int8_t(v));
      break;
    case ElemType::i16:
      put(d.bytes, i, int16_t(v));
      break;
    case ElemType::i32:
      put(d.bytes, i, int32_t(v));
      break;
    case ElemType::i64:
      put(d.bytes, i, int64_t(v));
      break;
    case ElemType::u8:
      put(d.bytes, i, uint8_t(v));
      break;
    case ElemType::u16:
      put(d.bytes, i, uint16_t(v));
      break;
    case ElemType::u32:
      put(d.bytes, i, uint32_t(v));
      break;
    case ElemType::u64:
      put(d.bytes, i, uint64_t(v));
      break;
  }
}

double load(const ArgData& d, int64_t i) {
  switch (d.type) {
    case ElemType::f16:
      return half_value(get<uint16_t>(d.bytes, i));
    case ElemType::bf16:
      return bfloat16_value(get<uint16_t>(d.bytes, i));
    case ElemType::f32:
      return get<float>(d.bytes, i);
    case ElemType::f64:
      return get<double>(d.bytes, i);
    case ElemType::i8:
      return get<int8_t>(d.bytes, i);
    case ElemType::i16:
      return get<int16_t>(d.bytes, i);
    case ElemType::i32:
      return get<int32_t>(d.bytes, i);
    case ElemType::i64:
      return double(get<int64_t>(d.bytes, i));
    case ElemType::u8:
      return get<uint8_t>(d.bytes, i);
    case ElemType::u16:
      return get<uint16_t>(d.bytes, i);
    case ElemType::u32:
      return get<uint32_t>(d.bytes, i);
    case ElemType::u64:
      return double(get<uint64_t>(d.bytes, i));
  }
  return 0;
}

}  // namespace

std::vector<float> ArgData::to_floats() const {
  std::vector<float> out(static_cast<size_t>(elements()));
  for (int64_t i = 0; i < elements(); ++i) out[size_t(i)] = float(load(*this, i));
  return out;
}

ir::Type storage_type(ElemType t) {
  switch (elem_bytes(t)) {
    case 1:
      return ir::Type::boolean();
    case 2:
      return t == ElemType::bf16 ? ir::Type::bf16() : ir::Type::f16();
    case 4:
      return t == ElemType::f32   ? ir::Type::f32()
             : t == ElemType::i32 ? ir::Type::i32()
                                  : ir::Type::u32();
    default:
      return ir::Type::i64();
  }
}

KernelParam kernel_param(const SpecArgument& a, int64_t elements) {
  KernelParam p;
  p.name = a.name;
  p.type = storage_type(a.type);
  p.is_pointer = !a.is_scalar;
  p.is_const = a.read_only && !a.is_scalar;
  p.elements = a.is_scalar ? 0 : elements;
  return p;
}

ArgData read_raw(const std::filesystem::path& path, ElemType type, int64_t elements,
                 const std::string& field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(fmt::format("{}: cannot open '{}'", field, path.string()));
  ArgData d;
  d.type = type;
  d.bytes.resize(static_cast<size_t>(elements * elem_bytes(type)));
  in.read(reinterpret_cast<char*>(d.bytes.data()), static_cast<std::streamsize>(d.bytes.size()));
  const bool short_read = in.gcount() != static_cast<std::streamsize>(d.bytes.size());
  const bool long_file = !short_read && in.peek() != std::ifstream::traits_type::eof();
  if (short_read || long_file)
    throw SpecError(fmt::format("{}: '{}' does not hold exactly {} {} elements ({} bytes)", field,
                                path.string(), elements, elem_name(type), d.bytes.size()));
  return d;
}

ArgData make_argument(const SpecArgument& a, int index, int64_t elements, double fill_value,
                      uint64_t seed) {
  if (a.fill == FillType::binary_raw)
    return read_raw(a.data_source, a.type, elements,
                    fmt::format("argument '{}' DataSource", a.name));
  ArgData d;
  d.type = a.type;
  d.bytes.resize(static_cast<size_t>(elements * elem_bytes(a.type)));
  if (a.fill == FillType::constant) {
    for (int64_t i = 0; i < elements; ++i) store(d, i, fill_value);
    return d;
  }
  const std::vector<float> u = fill_input(seed, index, elements);
  for (int64_t i = 0; i < elements; ++i) {
    double v = (double(u[size_t(i)]) + 1.0) * 0.5 * fill_value;
    if (!elem_is_float(a.type)) v = std::floor(v);
    store(d, i, v);
  }
  return d;
}

}  // namespace cutune::spec
