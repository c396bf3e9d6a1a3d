// What the worker's correctness check costs on the CPU for one output: the former path (widen
// the whole output to floats, then compare on one thread, the error floor recomputed every
// time) against compare_stored (the floor once per task, widening and comparing in chunks on
// 1..T threads). Both must give the same answer; the program exits 1 when they do not.
//
//   check_cost [ELEMENTS=16777216] [MAX_THREADS=hardware] [REPEATS=5]
//
// Prints, per storage type, the median milliseconds of each path over REPEATS.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_cli.h"
#include "src/measure/correctness.h"

using namespace cutune;

namespace {

template <typename F>
double median_ms(int repeats, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = int64_t(4096) * 4096;
  int max_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  int repeats = 5;
  CLI::App app{"The worker's correctness check: the former path against compare_stored",
               "check_cost"};
  app.add_option("ELEMENTS", n, "output elements")->check(cutune::bench::positive());
  app.add_option("MAX_THREADS", max_threads, "threads, doubling from 1")
      ->check(cutune::bench::positive());
  app.add_option("REPEATS", repeats, "runs per path (the median is printed)")
      ->check(cutune::bench::positive());
  if (int rc = cutune::bench::parse_command_line(app, argc, argv); rc >= 0) return rc;
  fmt::print("{} elements, median of {} runs, ms\n", n, repeats);
  fmt::print("| dtype | former path | floor once | compare_stored, threads: ms |\n|---|---|---|---|\n");
  int wrong = 0;
  for (const std::string dtype : {"float32", "float16", "bfloat16"}) {
    const std::vector<float> expected = fill_input(1, 0, n);
    std::vector<float> actual = input_values(1, 0, n, dtype);
    actual[size_t(n / 3)] += 0.25f;  // one planted error, so a worst element exists
    const std::vector<char> bytes = encode_values(actual, dtype);
    CompareResult former;
    const double former_ms = median_ms(repeats, [&] {
      const std::vector<float> values = decode_values(bytes.data(), n, dtype);
      former = compare_outputs(values.data(), expected.data(), n);
    });
    double scale = 0;
    const double scale_ms = median_ms(repeats, [&] { scale = compare_scale(expected.data(), n); });
    std::string cells;
    for (int t = 1; t <= max_threads; t *= 2) {
      CompareResult r;
      const double ms = median_ms(
          repeats, [&] { r = compare_stored(bytes.data(), dtype, expected.data(), n, scale, t); });
      cells += fmt::format("{}{}: {:.1f}", cells.empty() ? "" : ", ", t, ms);
      wrong += r.max_rel_error != former.max_rel_error || r.worst_index != former.worst_index;
    }
    fmt::print("| {} | {:.1f} | {:.1f} | {} |\n", dtype, former_ms, scale_ms, cells);
  }
  if (wrong) fmt::print(stderr, "check_cost: {} comparison(s) differ from the former path\n", wrong);
  return wrong ? 1 : 0;
}
