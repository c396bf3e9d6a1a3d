#pragma once
// The one correctness rule of cutune, used by the emulator check, the GPU worker and the tests:
// - inputs: fill_input (a counter-based hash, the same values on every machine), rounded to
//   the tensor's storage type (input_values), so that a CPU reference computes on exactly
//   the values the kernel reads;
// - outputs start as NaN (never written: fails) or, for zero_init outputs, as zero;
// - the comparison: element by element, the error scaled by max(|expected|, rms(expected)),
//   any NaN/Inf where the reference is finite fails;
// - the tolerance: by the output's storage type and the reduction length (error_tolerance).
// Storage types are named as in the worker protocol: "float32", "float16", "bfloat16".
// No GPU involved, so all of it is tested on the CPU.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "src/ir/type.h"

namespace cutune {

// Input values of tensor `tensor_index` for `seed`: uniform in [-1, 1), reproducible on every
// machine (a counter-based hash, no std:: distribution whose output may differ between
// standard libraries).
std::vector<float> fill_input(uint64_t seed, int tensor_index, int64_t elements);

// "float32", "float16", "bfloat16" for those ir types; std::invalid_argument otherwise.
std::string storage_dtype(ir::DType dtype);
// IEEE binary16 bits of `value` rounded to nearest even, and the value of such bits.
uint16_t half_bits(float value);
float half_value(uint16_t bits);
// The same for bfloat16.
uint16_t bfloat16_bits(float value);
float bfloat16_value(uint16_t bits);

// Bytes of one element of a storage type (4, 2, 2) or of a user kernel's element types
// (float64, int8 ... int64, uint8 ... uint64); std::invalid_argument (one line) for another
// name.
int64_t dtype_bytes(const std::string& dtype);

// `value` rounded to nearest even in a storage type (unchanged for float32);
// std::invalid_argument for a type that is not one.
float round_to_storage(float value, const std::string& dtype);

// fill_input rounded to `dtype`: what a kernel reading that tensor sees, as floats.
std::vector<float> input_values(uint64_t seed, int tensor_index, int64_t elements,
                                const std::string& dtype);

// The bytes of `values` stored as `dtype` (rounded to nearest even), and back; decode_values
// also widens every other element type of dtype_bytes (doubles and 64-bit integers rounded).
std::vector<char> encode_values(const std::vector<float>& values, const std::string& dtype);
std::vector<float> decode_values(const char* bytes, int64_t elements, const std::string& dtype);

// The largest acceptable error (see compare_outputs) of an output stored as `output_dtype`
// that sums `reduction_length` products accumulated in fp32, as every cutune template and the
// baselines do: 64 u32 sqrt(n) (the random-walk growth of rounding errors, about ten times
// what a correct kernel summing in another order shows; floor 16 u32), plus, for a 16-bit
// output, two units of its own roundoff (the final rounding, which may differ from the
// reference's by one step). An indexing bug produces errors of order one.
// Throws std::invalid_argument for a dtype other than float32 / float16 / bfloat16.
double error_tolerance(const std::string& output_dtype, int64_t reduction_length);

struct CompareResult {
  double max_rel_error = 0;  // max |a - e| / max(|e|, rms(e)); +inf with any non-finite value
  int64_t nonfinite = 0;     // NaN or Inf in the actual output where the expected is finite
  int64_t worst_index = -1;
  float worst_actual = 0, worst_expected = 0;
  bool ok(double tolerance) const { return nonfinite == 0 && max_rel_error <= tolerance; }
  // "max rel error 3.1e-02 at [1234] (got 1.5, expected 1.2)" or "5 NaN/Inf outputs ..."
  std::string describe(double tolerance) const;
};

// Compares element by element. The error is scaled by the larger of |expected| and the
// expected output's root mean square, so elements that cancel to near zero do not produce
// huge relative errors from ordinary rounding.
CompareResult compare_outputs(const float* actual, const float* expected, int64_t elements);

// The same rule in pieces, for a worker that checks many candidates against one reference:
// compare_scale is the error's floor (the expected output's root mean square over its finite
// elements, 1 when that is 0), computed once per reference; compare_outputs with a scale
// compares elements [first_index, first_index + elements) of a larger output (the indices in
// the result count from 0 of the whole output); compare_stored widens `actual_bytes` (stored as
// `dtype`) and compares on up to `threads` threads, chunks of at least 256Ki elements. Each
// returns exactly what compare_outputs(actual, expected, elements) returns on the whole output.
double compare_scale(const float* expected, int64_t elements);
CompareResult compare_outputs(const float* actual, const float* expected, int64_t elements,
                              double scale, int64_t first_index = 0);
CompareResult compare_stored(const char* actual_bytes, const std::string& dtype,
                             const float* expected, int64_t elements, double scale, int threads);

}  // namespace cutune
