#pragma once
// 64-bit FNV-1a (Fowler, Noll, Vo): the one byte hash of the project, for cache keys and the
// feature hashes of names. Not for anything adversarial.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cutune {

inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnv1aPrime = 0x100000001b3ull;

// `h` continued over `size` bytes at `data`.
inline uint64_t fnv1a(const void* data, size_t size, uint64_t h = kFnv1aOffset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= bytes[i];
    h *= kFnv1aPrime;
  }
  return h;
}

inline uint64_t fnv1a(std::string_view text, uint64_t h = kFnv1aOffset) {
  return fnv1a(text.data(), text.size(), h);
}

// A hash of several fields: each is taken with its length, so ("ab", "c") and ("a", "bc")
// differ.
class Fnv1a64 {
 public:
  Fnv1a64& add(std::string_view field) {
    const uint64_t size = field.size();
    state_ = fnv1a(&size, sizeof size, state_);
    state_ = fnv1a(field, state_);
    return *this;
  }
  uint64_t value() const { return state_; }

 private:
  uint64_t state_ = kFnv1aOffset;
};

}  // namespace cutune
