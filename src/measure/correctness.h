#pragma once
// What checking a candidate needs on the host, shared by the parent (which may compute a CPU
// reference) and the worker (which fills the device inputs): the deterministic input values,
// the error tolerance and the comparison. No GPU involved, so all of it is tested on the CPU.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace cutune {

// Input values of tensor `tensor_index` for `seed`: uniform in [-1, 1), reproducible on every
// machine (a counter-based hash, no std:: distribution whose output may differ between
// standard libraries).
std::vector<float> fill_input(uint64_t seed, int tensor_index, int64_t elements);

// The largest acceptable relative error (see compare_outputs) for a result that sums
// `reduction_length` products in `dtype`: a multiple of the unit roundoff times the square
// root of the length, the random-walk growth of rounding errors, with a floor.
// Throws std::invalid_argument for a dtype other than float32 / float16 / bfloat16.
double error_tolerance(const std::string& dtype, int64_t reduction_length);

struct CompareResult {
  double max_rel_error = 0;    // max |a - e| / max(|e|, rms(e)); +inf with any non-finite value
  int64_t nonfinite = 0;       // NaN or Inf in the actual output where the expected is finite
  int64_t worst_index = -1;
  float worst_actual = 0, worst_expected = 0;
  bool ok(double tolerance) const { return nonfinite == 0 && max_rel_error <= tolerance; }
  // "max rel error 3.1e-02 at [1234] (got 1.5, expected 1.2)" or "5 NaN/Inf outputs ..."
  std::string describe(double tolerance) const;
};

// Compares element by element. The error is scaled by the larger of |expected| and the
// expected output's root mean square, so elements that cancel to near zero do not produce
// huge relative errors from ordinary rounding. Sizes must match (std::invalid_argument).
CompareResult compare_outputs(const float* actual, const float* expected, int64_t elements);

}  // namespace cutune
