#include "src/tune/model/cascade.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_set>

namespace cutune {

KnobSurrogate::KnobSurrogate(const ConfigSpace& space, cost_model::RankModelOptions model,
                             int ensemble)
    : space_(space),
      model_options_(model),
      ensemble_(std::max(1, ensemble)),
      extractor_(cost_model::make_knob_features(space)),
      features_(*extractor_) {}

void KnobSurrogate::reset() {
  members_.clear();
  score_.clear();
}

void KnobSurrogate::fit(std::span<const Config> records, std::span<const float> labels, bool warm,
                        int warm_trees, uint64_t seed, int fit_number, double kappa,
                        int fit_trees) {
  score_.clear();
  kappa_ = ensemble_ > 1 ? kappa : 0.0;
  if (warm && members_.size() != static_cast<size_t>(ensemble_)) warm = false;
  if (!warm) members_.clear();
  cost_model::FeatureMatrix x = features_.matrix(records);
  const int n = x.rows;
  // Its own stream (not the policy's), so that turning the cascade on or off leaves every
  // other random draw of the policy where it was.
  std::mt19937_64 rng(seed * 0xC2B2AE3D27D4EB4Full + static_cast<uint64_t>(fit_number));
  std::uniform_int_distribution<int> pick(0, n - 1);
  for (int k = 0; k < ensemble_; ++k) {
    std::vector<int> rows(n);
    if (ensemble_ == 1) {
      std::iota(rows.begin(), rows.end(), 0);
    } else {
      bool any_ok = false;
      for (int& r : rows) {
        r = pick(rng);
        any_ok |= labels[r] > 0;
      }
      if (!any_ok) std::iota(rows.begin(), rows.end(), 0);
    }
    std::vector<float> l(n);
    for (int i = 0; i < n; ++i) l[i] = labels[rows[i]];
    cost_model::RankModelOptions mo = model_options_;
    mo.seed = rng();
    if (fit_trees > 0) mo.rounds = fit_trees;
    if (warm) {
      members_[k].model.boost(cost_model::select_rows(x, rows), l, warm_trees);
    } else {
      members_.push_back(Member{cost_model::RankModel(extractor_->schema(), mo)});
      members_.back().model.fit(cost_model::select_rows(x, rows), l);
    }
    Member& m = members_[k];
    std::vector<float> s = m.model.predict(x);
    double sum = 0, sq = 0;
    for (float v : s) sum += v;
    m.mean = sum / n;
    for (float v : s) sq += (v - m.mean) * (v - m.mean);
    m.scale = std::max(std::sqrt(sq / n), 1e-6);
  }
}

std::vector<float> KnobSurrogate::score(const std::vector<Config>& configs) {
  std::vector<Config> missing;
  std::unordered_set<uint64_t> asked;
  for (const Config& c : configs) {
    if (!score_.contains(c.index()) && asked.insert(c.index()).second) missing.push_back(c);
  }
  if (!missing.empty() && !members_.empty()) {
    cost_model::FeatureMatrix x = features_.matrix(missing);
    const size_t m = members_.size();
    std::vector<float> z(missing.size() * m);
    for (size_t k = 0; k < m; ++k) {
      std::vector<float> s = members_[k].model.predict(x);
      for (size_t i = 0; i < missing.size(); ++i) {
        z[i * m + k] = static_cast<float>((s[i] - members_[k].mean) / members_[k].scale);
      }
    }
    for (size_t i = 0; i < missing.size(); ++i) {
      const float* zi = &z[i * m];
      double sum = 0, sq = 0;
      for (size_t k = 0; k < m; ++k) sum += zi[k];
      double mean = sum / m;
      for (size_t k = 0; k < m; ++k) sq += (zi[k] - mean) * (zi[k] - mean);
      double sd = m > 1 ? std::sqrt(sq / (m - 1)) : 0.0;
      score_[missing[i].index()] = static_cast<float>(mean + kappa_ * sd);
    }
  }
  std::vector<float> out(configs.size(), 0.0f);
  for (size_t i = 0; i < configs.size(); ++i) {
    auto it = score_.find(configs[i].index());
    if (it != score_.end()) out[i] = it->second;
  }
  return out;
}

std::vector<Config> rank_survivors(const std::vector<Config>& survivors,
                                   std::span<const float> score, int count) {
  std::vector<size_t> idx(survivors.size());
  std::iota(idx.begin(), idx.end(), 0);
  size_t keep = std::min<size_t>(std::max(count, 0), idx.size());
  std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(), [&](size_t a, size_t b) {
    return score[a] != score[b] ? score[a] > score[b] : survivors[a].index() < survivors[b].index();
  });
  std::vector<Config> out;
  out.reserve(keep);
  for (size_t i = 0; i < keep; ++i) out.push_back(survivors[idx[i]]);
  return out;
}

}  // namespace cutune
