#include "src/tune/progress_line.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unistd.h>

#include <fmt/format.h>

namespace cutune {

ProgressLine::ProgressLine(std::FILE* out, int total, std::optional<double> flops,
                           double interval_s)
    : out_(out),
      total_(total),
      flops_(flops),
      interval_s_(interval_s),
      tty_(out != nullptr && isatty(fileno(out))),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

void ProgressLine::update(int done, int valid, int done_here, double best_s) {
  done_ = done;
  valid_ = valid;
  done_here_ = done_here;
  best_s_ = best_s;
  if (out_ == nullptr) return;
  auto now = std::chrono::steady_clock::now();
  if (tty_ || std::chrono::duration<double>(now - last_print_).count() >= interval_s_) {
    last_print_ = now;
    print(false);
  }
}

void ProgressLine::finish() {
  if (out_ == nullptr) return;
  print(true);
}

void ProgressLine::print(bool final) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = elapsed > 0 ? done_here_ / elapsed : 0;
  std::string best = "best -";
  if (std::isfinite(best_s_) && best_s_ > 0) {
    best = fmt::format("best {:.4g} ms", best_s_ * 1e3);
    if (flops_ && *flops_ > 0) best += fmt::format(" ({:.0f} GFLOP/s)", *flops_ / best_s_ * 1e-9);
  }
  std::string eta = "ETA -";
  if (rate > 0) eta = fmt::format("ETA {:.0f}s", std::max(0, total_ - done_) / rate);
  int share = done_ > 0 ? static_cast<int>(std::lround(100.0 * valid_ / done_)) : 0;
  std::string line = fmt::format("[{:>{}}/{}] valid {}% | {} | {:.1f} trials/s | {}", done_,
                                 std::to_string(total_).size(), total_, share, best, rate, eta);
  if (tty_) {
    fmt::print(out_, "\r\033[K{}{}", line, final ? "\n" : "");
  } else {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
  printed_ = true;
}

}  // namespace cutune
