#pragma once
// Scalar and vector types of the loop IR.

#include <cstdint>
#include <string>

namespace cutune::ir {

// The element kinds the IR knows. Integers are signed; Bool is the type of comparisons.
// Float16 and BFloat16 are storage types: raw IEEE binary16 / bfloat16 bits, printed as
// `cutune_half` / `cutune_bf16` (both `unsigned short`); arithmetic on them goes through the
// conversion intrinsics (src/ir/intrinsics.h). UInt32 holds untyped 32-bit registers, such as
// the packed 16-bit pairs of a tensor-core fragment (printed `unsigned`); it takes no arithmetic.
enum class DType : uint8_t { Bool, Int32, Int64, Float32, Float16, BFloat16, UInt32 };

// A scalar or short vector type. lanes > 1 only for loads and stores of 2 or 4 contiguous
// elements (CUDA's float2/float4 and the like). Two 16-bit lanes are one 32-bit word (printed
// `unsigned`, lane 0 in bits 0-15).
struct Type {
  DType dtype = DType::Int32;
  int lanes = 1;

  static constexpr Type boolean() { return {DType::Bool, 1}; }
  static constexpr Type i32() { return {DType::Int32, 1}; }
  static constexpr Type i64() { return {DType::Int64, 1}; }
  static constexpr Type f32() { return {DType::Float32, 1}; }
  static constexpr Type f16() { return {DType::Float16, 1}; }
  static constexpr Type bf16() { return {DType::BFloat16, 1}; }
  static constexpr Type u32() { return {DType::UInt32, 1}; }

  constexpr Type with_lanes(int n) const { return {dtype, n}; }
  constexpr Type element() const { return {dtype, 1}; }
  constexpr bool is_int() const { return dtype == DType::Int32 || dtype == DType::Int64; }
  constexpr bool is_float() const {
    return dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16;
  }
  constexpr bool is_bool() const { return dtype == DType::Bool; }
  // Storage-only types: moved, loaded, stored and passed to intrinsics, never computed on.
  constexpr bool is_storage_only() const {
    return dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::UInt32;
  }
  constexpr bool is_vector() const { return lanes > 1; }
  // Size of one element in bytes.
  constexpr int element_bytes() const {
    switch (dtype) {
      case DType::Bool:
        return 1;
      case DType::Int32:
        return 4;
      case DType::Int64:
        return 8;
      case DType::Float32:
        return 4;
      case DType::Float16:
        return 2;
      case DType::BFloat16:
        return 2;
      case DType::UInt32:
        return 4;
    }
    return 0;
  }
  constexpr int bytes() const { return element_bytes() * lanes; }

  friend constexpr bool operator==(const Type&, const Type&) = default;
};

// The CUDA C spelling of a type: "float", "int", "float4", "cutune_half", "unsigned", ...
std::string cuda_type_name(Type t);

// The storage name of a dtype as records, manifests and the worker protocol write it:
// "bool", "int32", "int64", "float32", "float16", "bfloat16", "uint32".
std::string dtype_name(DType d);

}  // namespace cutune::ir
