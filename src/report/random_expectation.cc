#include "src/report/random_expectation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace cutune::report {

RandomCurve expected_random_best(std::vector<double> ok_times_s, int64_t population, int max_k) {
  const int64_t n = population;
  const int64_t m = static_cast<int64_t>(ok_times_s.size());
  if (n < m) throw std::invalid_argument("expected_random_best: more ok times than the population");
  for (double t : ok_times_s)
    if (!std::isfinite(t) || t < 0)
      throw std::invalid_argument("expected_random_best: a time is negative or not finite");
  std::sort(ok_times_s.begin(), ok_times_s.end());

  RandomCurve curve;
  const int64_t kmax = std::min<int64_t>(std::max(max_k, 0), n);
  curve.expected_best_s.reserve(kmax);
  curve.p_none.reserve(kmax);
  double p_none = 1;  // C(N - M, k) / C(N, k), updated one factor per k
  for (int64_t k = 1; k <= kmax; ++k) {
    p_none *= n - m - (k - 1) > 0 ? static_cast<double>(n - m - (k - 1)) / (n - (k - 1)) : 0.0;
    // P(best = rank i) by its ratio to the previous rank, so no binomial is ever formed:
    // C(N-i-1, k-1) / C(N-i, k-1) = (N-i-k+1) / (N-i). Rank 1 is drawn with probability k/N.
    double p = static_cast<double>(k) / n;
    double sum = 0;
    for (int64_t i = 1; i <= m && p > 1e-300; ++i) {
      sum += ok_times_s[i - 1] * p;
      p *= n - i - k + 1 > 0 ? static_cast<double>(n - i - k + 1) / (n - i) : 0.0;
    }
    const double p_some = 1 - p_none;
    curve.expected_best_s.push_back(p_some > 0 ? sum / p_some
                                               : std::numeric_limits<double>::quiet_NaN());
    curve.p_none.push_back(p_none);
  }
  return curve;
}

}  // namespace cutune::report
