#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "cost_model/gaussian_process.h"
#include "cost_model/rank_metrics.h"

using namespace cutune::cost_model;

namespace {

// A smooth bump over the unit square with its peak at (0.7, 0.3).
double bump(double a, double b) {
  return std::exp(-((a - 0.7) * (a - 0.7) + (b - 0.3) * (b - 0.3)) / 0.08);
}

// n uniformly random points of the unit square (x, row-major) and f at each (y).
template <class F>
void random_points(uint64_t seed, int n, F f, std::vector<double>& x, std::vector<double>& y) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < n; ++i) {
    const double a = u(rng), b = u(rng);
    x.insert(x.end(), {a, b});
    y.push_back(f(a, b));
  }
}

}  // namespace

TEST_CASE("a Gaussian process interpolates what it was fitted on and is unsure far from it",
          "[gaussian_process]") {
  // Five points on a line; targets of mean 2 and deviation sqrt(2) (standardised: -1.41 ..).
  std::vector<double> x{0.0, 0.25, 0.5, 0.75, 1.0};
  std::vector<double> y{0, 1, 2, 3, 4};
  GaussianProcess gp;
  gp.fit(x, 1, y);
  REQUIRE(gp.trained());
  std::vector<double> mean, sd;
  gp.predict(x, mean, sd);
  for (size_t i = 0; i < y.size(); ++i) {
    CHECK(mean[i] == Approx((y[i] - 2.0) / std::sqrt(2.0)).margin(0.05));
    CHECK(sd[i] < 0.1);
  }
  // Between the points the mean lies between its neighbours'; far outside, the deviation
  // grows towards the prior's.
  gp.predict({0.375, 3.0}, mean, sd);
  CHECK(mean[0] > -0.71 - 0.05);
  CHECK(mean[0] < 0.0 + 0.05);
  CHECK(sd[1] > 0.5);
  CHECK(sd[1] > 5 * sd[0]);
}

TEST_CASE("a Gaussian process gives a coordinate that explains nothing a long length scale",
          "[gaussian_process]") {
  // The target depends on the first coordinate only.
  std::vector<double> x, y;
  random_points(7, 30, [](double a, double) { return std::sin(6 * a); }, x, y);
  GaussianProcess gp;
  gp.fit(x, 2, y);
  REQUIRE(gp.length_scales().size() == 2);
  CHECK(gp.length_scales()[1] > 2 * gp.length_scales()[0]);
  CHECK(std::isfinite(gp.log_marginal_likelihood()));
}

TEST_CASE("a Gaussian process fitted on 25 random points ranks a grid by a smooth bump",
          "[gaussian_process]") {
  std::vector<double> x, y;
  random_points(11, 25, bump, x, y);
  GaussianProcess gp;
  gp.fit(x, 2, y);
  std::vector<double> grid;
  std::vector<float> truth;
  for (int i = 0; i <= 20; ++i) {
    for (int j = 0; j <= 20; ++j) {
      grid.insert(grid.end(), {i / 20.0, j / 20.0});
      truth.push_back(static_cast<float>(bump(i / 20.0, j / 20.0)));
    }
  }
  std::vector<double> mean, sd;
  gp.predict(grid, mean, sd);
  std::vector<float> pred(mean.begin(), mean.end());
  CHECK(pairwise_accuracy(pred, truth) > 0.9);
  // Its best predicted grid point is within 0.1 of the peak on each coordinate.
  size_t best = std::max_element(pred.begin(), pred.end()) - pred.begin();
  CHECK(std::abs(grid[2 * best] - 0.7) <= 0.1 + 1e-9);
  CHECK(std::abs(grid[2 * best + 1] - 0.3) <= 0.1 + 1e-9);
}

TEST_CASE("a Gaussian process refuses mismatched sizes and predicts the prior before a fit",
          "[gaussian_process]") {
  GaussianProcess gp;
  CHECK_THROWS_AS(gp.fit({0.1, 0.2, 0.3}, 2, {1.0, 2.0}), std::invalid_argument);
  CHECK_THROWS_AS(gp.fit({}, 1, {}), std::invalid_argument);
  CHECK_FALSE(gp.trained());
  // Duplicate points with equal targets: a constant, fitted without failing.
  gp.fit({0.5, 0.5, 0.5}, 1, {1.0, 1.0, 1.0});
  std::vector<double> mean, sd;
  gp.predict({0.5, 0.9}, mean, sd);
  CHECK(mean[0] == Approx(0.0).margin(1e-6));
  CHECK(mean[1] == Approx(0.0).margin(1e-6));
}
