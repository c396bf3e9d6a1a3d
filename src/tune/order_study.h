#pragma once
// How good an order of measuring a recorded sample is, for the start of a search (issue 50
// item 5): given every configuration of a sample with its measured throughput (0 for a failed
// one), an order's best throughput within its first F trials (over the sample's best) and the
// trials it takes to reach 95% of the sample's best. bench/prior_study.cc compares the
// analytical prior's order with random orders and with today's default start (the template's
// reference configurations, then random) on a sample timed on a GPU.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cutune {

struct OrderFigures {
  double best_of_first = 0;  // over the sample's best, in [0, 1]
  double trials_to_95 = 0;   // 1-based; the sample's size + 1 when the order never gets there
};

// `order` lists positions into `throughput`, each once; positions left out come after it in
// any order (they are not counted as measured before it ends).
OrderFigures order_figures(const std::vector<double>& throughput, const std::vector<size_t>& order,
                           int first);

struct OrderStudy {
  OrderFigures prior;     // descending prior score, ties by position
  OrderFigures fronted;   // `front` first, then random (mean / median over the shuffles)
  OrderFigures random;    // random orders (mean best of first F, median trials to 95%)
  double spearman = 0;    // rank correlation of prior score and throughput over the ok ones
  int sample = 0, ok = 0;
};

// The three orders of one sample: `score` the prior's (higher: faster), `front` the positions
// measured first by default (the reference configurations found in the sample), `shuffles`
// random orders drawn from `seed`.
OrderStudy study_orders(const std::vector<double>& throughput, const std::vector<float>& score,
                        const std::vector<size_t>& front, int first, int shuffles, uint64_t seed);

}  // namespace cutune
