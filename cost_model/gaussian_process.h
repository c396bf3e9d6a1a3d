#pragma once
// A Gaussian-process regression over points of the unit cube, for the first trials of a search
// (bench/notes/search-experiments.md, "a Gaussian process ranks until 64 records"): with a few
// dozen records, a smooth prior over the knobs' positions ranks what is unmeasured better than
// trees fitted to them (Snoek, Larochelle and Adams, "Practical Bayesian Optimization of Machine
// Learning Algorithms", NeurIPS 2012, after whom the kernel; the search ranks by an upper
// bound, mean + kappa sd, as in GP-UCB, Srinivas et al., ICML 2010).
//
// Kernel: Matern 5/2 with one length scale per coordinate (ARD), a signal variance and a noise
// share. Targets are standardised (mean 0, deviation 1). The hyperparameters maximise the
// log marginal likelihood, the signal variance in closed form, the noise share and the
// length scales over grids: first one scale for every coordinate, then coordinate by
// coordinate for `sweeps` passes (a coordinate whose changes do not explain the targets gets
// a long scale and stops counting in the distances).

#include <utility>
#include <vector>

namespace cutune::cost_model {

struct GaussianProcessOptions {
  // Length scales tried, in units of the cube's side.
  std::vector<double> length_scales = {0.05, 0.1, 0.2, 0.35, 0.6, 1.0, 2.0, 5.0};
  // Noise variance as a share of the signal variance.
  std::vector<double> noise_shares = {1e-4, 1e-2, 0.1};
  int sweeps = 2;
};

class GaussianProcess {
 public:
  explicit GaussianProcess(GaussianProcessOptions options = {}) : options_(std::move(options)) {}

  // x: n points of d coordinates each (row-major, n * d values), y: their n targets.
  // Throws std::invalid_argument (one line) on mismatched sizes or no points.
  void fit(const std::vector<double>& x, int d, const std::vector<double>& y);
  bool trained() const { return n_ > 0; }

  // The posterior at m points (row-major, m * d values) in the targets' standardised units:
  // mean[i] and its deviation sd[i] (of the latent function, without the noise).
  void predict(const std::vector<double>& x, std::vector<double>& mean,
               std::vector<double>& sd) const;

  const std::vector<double>& length_scales() const { return scales_; }
  double noise_share() const { return noise_; }
  double log_marginal_likelihood() const { return lml_; }

 private:
  // Fits the factorisation for the given hyperparameters; the log marginal likelihood
  // (with the signal variance at its optimum), or -inf where the matrix is not positive.
  double evaluate(const std::vector<double>& scales, double noise);

  GaussianProcessOptions options_;
  int n_ = 0, d_ = 0;
  std::vector<double> x_;       // n * d
  std::vector<double> y_;       // standardised
  std::vector<double> scales_;  // d
  double noise_ = 0, lml_ = 0, signal_ = 1;
  std::vector<double> chol_;   // lower factor of C + noise I, n * n, row-major
  std::vector<double> alpha_;  // (C + noise I)^-1 y
};

}  // namespace cutune::cost_model
