#pragma once
// The live progress line of a tuning run on stderr:
//   "[ 96/200] valid 91% | best 0.412 ms (2605 GFLOP/s) | 31.2 trials/s | ETA 3s"
// On a terminal it is redrawn in place after every batch; otherwise (a file, a pipe, a CI log)
// it is printed as a whole line at most every `interval_s` seconds, and once at the end.

#include <chrono>
#include <cstdio>
#include <optional>

namespace cutune {

class ProgressLine {
 public:
  // `flops` is the work of one run of the kernel, for GFLOP/s; none: times only.
  ProgressLine(std::FILE* out, int total, std::optional<double> flops, double interval_s = 5.0);

  // `done` trials so far (of which `valid` ok), `done_here` of them measured by this run (the
  // rate counts only those), best time in seconds (infinity: none yet).
  void update(int done, int valid, int done_here, double best_s);
  // The last state as a whole line (and a newline after an in-place line).
  void finish();

 private:
  void print(bool final);

  std::FILE* out_;
  int total_;
  std::optional<double> flops_;
  double interval_s_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  int done_ = 0, valid_ = 0, done_here_ = 0;
  double best_s_ = 0;
  bool printed_ = false;
};

}  // namespace cutune
