#include "src/report/plots.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "src/report/gnuplot.h"

namespace cutune::report {
namespace {

// The colours of the page's CSS, so plot and text agree.
constexpr const char* kSearchColour = "#1f5fa8";
constexpr const char* kRandomColour = "#d9822b";
constexpr const char* kBaselineColour = "#2a8a3e";

std::string preamble(int height) {
  // noenhanced: task and knob names hold underscores, which enhanced text would subscript.
  return fmt::format(
      "set terminal svg size 760,{} dynamic noenhanced font 'sans,12' background rgb 'white'\n"
      "set border lw 1 lc rgb '#555555'\n"
      "set grid lc rgb '#dddddd'\n"
      "set key top right box opaque\n",
      height);
}

std::string baseline_label(const Baseline& b) {
  std::string name = b.name == "cudnn" ? "cuDNN" : b.name == "cublas" ? "cuBLAS" : b.name;
  return fmt::format("{} {:.4g} ms", name, b.time_s * 1e3);
}

}  // namespace

std::optional<std::string> best_so_far_script(const TaskSummary& s) {
  if (!s.best_s()) return std::nullopt;
  std::string data = "$best << EOD\n";
  double lo = *s.best_s(), hi = 0;
  for (size_t t = 0; t < s.best_so_far_s.size(); ++t) {
    const double b = s.best_so_far_s[t];
    if (!std::isfinite(b)) continue;
    hi = std::max(hi, b);
    data += fmt::format("{} {:.9g}\n", t + 1, b * 1e3);
  }
  data += "EOD\n";
  bool have_random = false;
  std::string random = "$random << EOD\n";
  for (size_t k = 0; k < s.random.expected_best_s.size(); ++k) {
    const double e = s.random.expected_best_s[k];
    if (!std::isfinite(e)) continue;
    have_random = true;
    hi = std::max(hi, e);
    lo = std::min(lo, e);
    random += fmt::format("{} {:.9g}\n", k + 1, e * 1e3);
  }
  random += "EOD\n";
  if (s.baseline) {
    lo = std::min(lo, s.baseline->time_s);
    hi = std::max(hi, s.baseline->time_s);
  }

  std::string script = preamble(380) + data + (have_random ? random : "");
  script += "set xlabel 'trials'\nset ylabel 'best time so far (ms)'\n";
  script += fmt::format("set xrange [1:{}]\n", std::max<int64_t>(s.trials, 2));
  if (hi > 5 * lo)
    script += "set logscale y\n";
  else
    script += fmt::format("set yrange [{:.9g}:{:.9g}]\n", lo * 1e3 * 0.95, hi * 1e3 * 1.05);
  std::string plot = fmt::format(
      "plot $best using 1:2 with steps lw 2.5 lc rgb '{}' title 'this search'", kSearchColour);
  if (have_random) {
    plot +=
        fmt::format(", $random using 1:2 with lines dt 2 lw 2 lc rgb '{}' title {}", kRandomColour,
                    gnuplot_quote(s.random_over == "cache"
                                      ? "random search, expected (whole cache)"
                                      : "random search, expected (draws from the measured set)"));
  }
  if (s.baseline) {
    plot +=
        fmt::format(", {:.9g} with lines dt 3 lw 2 lc rgb '{}' title {}", s.baseline->time_s * 1e3,
                    kBaselineColour, gnuplot_quote(baseline_label(*s.baseline)));
  }
  return script + plot + "\n";
}

std::optional<std::string> histogram_script(const TaskSummary& s, int bins) {
  if (s.ok_times_s.empty()) return std::nullopt;
  const Histogram h = log_histogram(s.ok_times_s, bins);
  std::string data = "$bins << EOD\n";
  for (size_t i = 0; i < h.counts.size(); ++i) {
    double a = h.edges_s[i] * 1e3, b = h.edges_s[i + 1] * 1e3;
    if (b <= a) {  // every time equal: a narrow box around it
      a *= 0.98;
      b *= 1.02;
    }
    data += fmt::format("{:.9g} {:.9g} {}\n", a, b, h.counts[i]);
  }
  data += "EOD\n";
  std::string script = preamble(340) + data;
  // Within one decade a log axis would carry a single tick; the bins stay log-spaced.
  const bool log_axis = h.edges_s.back() > 10 * h.edges_s.front();
  script += fmt::format("set xlabel 'median time of an ok trial (ms{})'\nset ylabel 'trials'\n",
                        log_axis ? ", log scale" : "");
  script += log_axis ? "set logscale x\n" : "";
  // Headroom above the tallest bin for the markers' labels.
  script +=
      "set yrange [0:*]\nset offsets 0, 0, graph 0.18, 0\n"
      "set style fill solid 0.75 border rgb '#ffffff'\n"
      "set style textbox opaque noborder\n";
  const double best_ms = *std::min_element(s.ok_times_s.begin(), s.ok_times_s.end()) * 1e3;
  // The best and the baseline are vertical arrows at graph-relative height, which need no
  // knowledge of the y range.
  const std::string plot = fmt::format(
      "plot $bins using (sqrt($1*$2)):($3/2.0):1:2:(0):3 with boxxyerror lc rgb '{}' "
      "title 'ok trials'",
      kSearchColour);
  script += fmt::format(
      "set arrow 1 from {:.9g}, graph 0 to {:.9g}, graph 1 nohead dt 2 lw 2 lc rgb '{}'\n"
      "set label 1 {} at {:.9g}, graph 0.95 offset 0.5,0 tc rgb '{}' front boxed\n",
      best_ms, best_ms, kRandomColour, gnuplot_quote(fmt::format("best {:.4g} ms", best_ms)),
      best_ms, kRandomColour);
  if (s.baseline) {
    const double b = s.baseline->time_s * 1e3;
    const double lo = std::min(h.edges_s.front() * 1e3, b),
                 hi = std::max(h.edges_s.back() * 1e3, b);
    script += fmt::format("set xrange [{:.9g}:{:.9g}]\n", lo / 1.1, hi * 1.1);
    script += fmt::format(
        "set arrow 2 from {:.9g}, graph 0 to {:.9g}, graph 1 nohead dt 3 lw 2 lc rgb '{}'\n"
        "set label 2 {} at {:.9g}, graph 0.87 offset 0.5,0 tc rgb '{}' front boxed\n",
        b, b, kBaselineColour, gnuplot_quote(baseline_label(*s.baseline)), b, kBaselineColour);
  }
  return script + plot + "\n";
}

std::optional<std::string> rounds_script(const TaskSummary& s) {
  std::string data = "$rounds << EOD\n";
  bool any = false;
  for (size_t r = 0; r < s.rounds.size(); ++r) {
    if (!std::isfinite(s.rounds[r].quality)) continue;
    any = true;
    data += fmt::format("{} {:.6f}\n", r + 1, s.rounds[r].quality);
  }
  data += "EOD\n";
  if (!any) return std::nullopt;
  std::string script = preamble(300) + data;
  script += fmt::format("set xlabel 'round ({} trials each)'\n", s.batch);
  script += fmt::format("set ylabel {}\n", gnuplot_quote(s.random_over == "cache"
                                                             ? "share of the cache beaten"
                                                             : "share of measured trials beaten"));
  script += fmt::format("set xrange [0.5:{}]\nset yrange [0:1.05]\n", s.rounds.size() + 0.5);
  script += s.rounds.size() <= 20 ? "set xtics 1\n" : "";
  script += "set key bottom right box opaque\n";
  script += fmt::format(
      "plot $rounds using 1:2 with linespoints pt 7 ps 0.8 lw 2 lc rgb '{}' "
      "title 'mean over the round''s ok candidates', "
      "0.5 with lines dt 2 lw 2 lc rgb '{}' title 'random proposals (expected)'\n",
      kSearchColour, kRandomColour);
  return script;
}

}  // namespace cutune::report
