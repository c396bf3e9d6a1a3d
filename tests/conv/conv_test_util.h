#pragma once
// Helpers shared by the convolution tests: sampling configurations with a fixed seed.

#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/template.h"

namespace cutune::test {

inline std::vector<Config> sample_configs(const Template& tmpl, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Config> out;
  for (int i = 0; i < count; ++i) {
    std::optional<Config> c = tmpl.space().sample_valid(rng);
    REQUIRE(c.has_value());
    out.push_back(*c);
  }
  return out;
}

}  // namespace cutune::test
