#include "src/tune/order_study.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace cutune {

namespace {

// Ranks (0-based, ties averaged) of `v`.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::ranges::sort(idx, [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> out(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) out[idx[k]] = (i + j) / 2.0;
    i = j + 1;
  }
  return out;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = double(a.size());
  if (n < 2) return 0;
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

double median(std::vector<double> v) {
  std::ranges::sort(v);
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

OrderFigures order_figures(const std::vector<double>& throughput, const std::vector<size_t>& order,
                           int first) {
  const double best = *std::ranges::max_element(throughput);
  OrderFigures f;
  f.trials_to_95 = double(throughput.size() + 1);
  if (best <= 0) return f;
  double found = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    found = std::max(found, throughput[order[i]]);
    if (int(i) < first) f.best_of_first = found / best;
    if (found >= 0.95 * best && f.trials_to_95 > double(throughput.size())) {
      f.trials_to_95 = double(i + 1);
    }
  }
  return f;
}

OrderStudy study_orders(const std::vector<double>& throughput, const std::vector<float>& score,
                        const std::vector<size_t>& front, int first, int shuffles, uint64_t seed) {
  OrderStudy s;
  s.sample = int(throughput.size());
  std::vector<size_t> all(throughput.size());
  std::iota(all.begin(), all.end(), 0);

  std::vector<size_t> by_prior = all;
  std::ranges::stable_sort(by_prior, [&](size_t a, size_t b) { return score[a] > score[b]; });
  s.prior = order_figures(throughput, by_prior, first);

  std::mt19937_64 rng(seed);
  std::vector<double> random_best, random_trials, front_best, front_trials;
  std::vector<size_t> rest;
  for (size_t p : all) {
    if (std::ranges::find(front, p) == front.end()) rest.push_back(p);
  }
  for (int k = 0; k < shuffles; ++k) {
    std::vector<size_t> order = all;
    std::ranges::shuffle(order, rng);
    const OrderFigures r = order_figures(throughput, order, first);
    random_best.push_back(r.best_of_first);
    random_trials.push_back(r.trials_to_95);
    std::vector<size_t> fronted = front;
    std::vector<size_t> tail = rest;
    std::ranges::shuffle(tail, rng);
    fronted.insert(fronted.end(), tail.begin(), tail.end());
    const OrderFigures d = order_figures(throughput, fronted, first);
    front_best.push_back(d.best_of_first);
    front_trials.push_back(d.trials_to_95);
  }
  auto mean = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  };
  s.random = {mean(random_best), median(random_trials)};
  s.fronted = {mean(front_best), median(front_trials)};

  std::vector<double> ok_score, ok_throughput;
  for (size_t i = 0; i < throughput.size(); ++i) {
    if (throughput[i] <= 0) continue;
    ok_score.push_back(score[i]);
    ok_throughput.push_back(throughput[i]);
  }
  s.ok = int(ok_score.size());
  s.spearman = pearson(ranks(ok_score), ranks(ok_throughput));
  return s;
}

}  // namespace cutune
