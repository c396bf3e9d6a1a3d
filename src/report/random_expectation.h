#pragma once
// Random search's exact expectation on a finite population of configurations: the expected
// best (lowest) time after k draws without replacement, the baseline every tuner's
// best-so-far curve is judged against.
//
// The population has `population` configurations; `ok_times_s` are the times of those that
// measured ok (the others failed and never become the best). With the ok times sorted
// ascending, t_(1) <= ... <= t_(M), and the failures ranked after all of them, the best of k
// draws is t_(i) exactly when rank i is drawn and no better rank is:
//
//   P(best = t_(i)) = C(N - i, k - 1) / C(N, k),      P(no ok draw) = C(N - M, k) / C(N, k),
//
// and the curve holds E[best | at least one ok draw] = Σ_i t_(i) P(best = t_(i)) / (1 - P(none)).

#include <cstdint>
#include <vector>

namespace cutune::report {

struct RandomCurve {
  // expected_best_s[k - 1]: E[best time | some draw ok] after k draws, seconds; NaN where every
  // one of k draws can fail with certainty (k <= N - M and M = 0).
  std::vector<double> expected_best_s;
  // p_none[k - 1]: the probability that all k draws failed.
  std::vector<double> p_none;
};

// k = 1 .. min(max_k, population). population >= ok_times_s.size(); times finite and >= 0.
// std::invalid_argument otherwise. O(M · max_k) time in the worst case; terms below 1e-300
// are dropped.
RandomCurve expected_random_best(std::vector<double> ok_times_s, int64_t population, int max_k);

}  // namespace cutune::report
