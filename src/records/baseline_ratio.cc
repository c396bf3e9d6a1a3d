#include "src/records/baseline_ratio.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cutune {

namespace {

bool usable(const std::optional<double>& t) { return t && std::isfinite(*t) && *t > 0; }

}  // namespace

BaselineRatios baseline_ratios(const std::vector<std::optional<double>>& baseline_s,
                               const std::vector<std::optional<double>>& tuned_s) {
  if (baseline_s.size() != tuned_s.size())
    throw std::logic_error("baseline_ratios: lists of different lengths");
  BaselineRatios out;
  out.total = int(baseline_s.size());
  double log_sum = 0;
  for (size_t i = 0; i < baseline_s.size(); ++i) {
    if (!usable(baseline_s[i]) || !usable(tuned_s[i])) continue;
    out.ratios.push_back(*baseline_s[i] / *tuned_s[i]);
    log_sum += std::log(out.ratios.back());
  }
  out.counted = int(out.ratios.size());
  if (out.counted == 0) return out;
  out.geomean = std::exp(log_sum / out.counted);
  std::vector<double> sorted = out.ratios;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  out.median = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  return out;
}

}  // namespace cutune
