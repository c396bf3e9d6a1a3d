#pragma once
// Deterministic samples of valid GEMM configurations for the kernel tests.

#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/template.h"
#include "tests/kernels/stratified_sample.h"

namespace cutune::test {

// `count` configurations drawn uniformly among the valid ones, from a fixed seed.
inline std::vector<Config> sample_configs(const Template& t, int count, uint64_t seed) {
  return uniform_pool(t, seed, count);
}

inline std::string describe(const Template& t, const Config& c) {
  std::string shape;
  for (int64_t s : t.shape()) shape += (shape.empty() ? "" : ",") + std::to_string(s);
  return t.name() + " " + shape + " config " + std::to_string(c.index()) + ": " +
         c.to_json().dump();
}

}  // namespace cutune::test
