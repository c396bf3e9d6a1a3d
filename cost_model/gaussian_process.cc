#include "cost_model/gaussian_process.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace cutune::cost_model {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;

// Matern 5/2 correlations between the rows of a (na x d) and b (nb x d), each coordinate
// divided by its length scale.
Matrix matern52(const double* a, int na, const double* b, int nb,
                const std::vector<double>& scales) {
  const int d = static_cast<int>(scales.size());
  const double root5 = std::sqrt(5.0);
  Matrix out(na, nb);
  for (int i = 0; i < na; ++i) {
    for (int j = 0; j < nb; ++j) {
      double r2 = 0;
      for (int k = 0; k < d; ++k) {
        const double t = (a[i * d + k] - b[j * d + k]) / scales[k];
        r2 += t * t;
      }
      const double r = std::sqrt(r2);
      out(i, j) = (1 + root5 * r + 5.0 / 3.0 * r2) * std::exp(-root5 * r);
    }
  }
  return out;
}

}  // namespace

double GaussianProcess::evaluate(const std::vector<double>& scales, double noise) {
  Matrix c = matern52(x_.data(), n_, x_.data(), n_, scales);
  c.diagonal().array() += noise;
  Eigen::LLT<Matrix> llt(c);
  if (llt.info() != Eigen::Success) return -std::numeric_limits<double>::infinity();
  Eigen::Map<const Vector> y(y_.data(), n_);
  Vector alpha = llt.solve(y);
  const double signal = std::max(y.dot(alpha) / n_, 1e-12);
  Matrix l = llt.matrixL();
  double logdet = 0;
  for (int i = 0; i < n_; ++i) logdet += std::log(l(i, i));
  const double lml = -0.5 * n_ * std::log(signal) - logdet;
  if (lml > lml_) {
    lml_ = lml;
    scales_ = scales;
    noise_ = noise;
    signal_ = signal;
    chol_.assign(l.data(), l.data() + static_cast<size_t>(n_) * n_);
    alpha_.assign(alpha.data(), alpha.data() + n_);
  }
  return lml;
}

void GaussianProcess::fit(const std::vector<double>& x, int d, const std::vector<double>& y) {
  if (y.empty() || d <= 0 || x.size() != y.size() * static_cast<size_t>(d)) {
    throw std::invalid_argument(
        "GaussianProcess::fit: need n points of d coordinates and n targets");
  }
  n_ = static_cast<int>(y.size());
  d_ = d;
  x_ = x;
  double mean = 0, sq = 0;
  for (double v : y) mean += v;
  mean /= n_;
  for (double v : y) sq += (v - mean) * (v - mean);
  const double sd = std::sqrt(sq / n_);
  y_.resize(n_);
  for (int i = 0; i < n_; ++i) y_[i] = sd > 1e-12 ? (y[i] - mean) / sd : 0.0;
  lml_ = -std::numeric_limits<double>::infinity();
  // One scale for every coordinate, with every noise share.
  for (double s : options_.length_scales) {
    for (double noise : options_.noise_shares) evaluate(std::vector<double>(d, s), noise);
  }
  // Then each coordinate's own, and the noise again after each pass.
  for (int pass = 0; pass < options_.sweeps; ++pass) {
    for (int k = 0; k < d; ++k) {
      for (double s : options_.length_scales) {
        std::vector<double> scales = scales_;
        scales[k] = s;
        evaluate(scales, noise_);
      }
    }
    const std::vector<double> scales = scales_;
    for (double noise : options_.noise_shares) evaluate(scales, noise);
  }
  if (!std::isfinite(lml_)) {
    // Not positive for any grid point (only with duplicate points and no noise): the prior.
    scales_.assign(d, options_.length_scales.back());
    noise_ = 1.0;
    evaluate(scales_, noise_);
  }
}

void GaussianProcess::predict(const std::vector<double>& x, std::vector<double>& mean,
                              std::vector<double>& sd) const {
  const int m = d_ > 0 ? static_cast<int>(x.size() / d_) : 0;
  mean.assign(m, 0.0);
  sd.assign(m, 1.0);
  if (!trained() || m == 0) return;
  Matrix cross = matern52(x_.data(), n_, x.data(), m, scales_);  // n x m
  Eigen::Map<const Vector> alpha(alpha_.data(), n_);
  Eigen::Map<const Matrix> l(chol_.data(), n_, n_);
  Vector mu = cross.transpose() * alpha;
  l.triangularView<Eigen::Lower>().solveInPlace(cross);
  for (int i = 0; i < m; ++i) {
    mean[i] = mu[i];
    sd[i] = std::sqrt(std::max(0.0, signal_ * (1.0 - cross.col(i).squaredNorm())));
  }
}

}  // namespace cutune::cost_model
