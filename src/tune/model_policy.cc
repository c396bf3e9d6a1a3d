#include "src/tune/model_policy.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>

namespace cutune {

std::string_view to_string(Acquisition a) {
  switch (a) {
    case Acquisition::mean: return "mean";
    case Acquisition::ucb: return "ucb";
    case Acquisition::thompson: return "thompson";
  }
  return "?";
}

Acquisition parse_acquisition(std::string_view name) {
  for (Acquisition a : {Acquisition::mean, Acquisition::ucb, Acquisition::thompson}) {
    if (name == to_string(a)) return a;
  }
  throw std::invalid_argument("unknown acquisition '" + std::string(name) +
                              "' (expected mean, ucb or thompson)");
}

ModelPolicy::ModelPolicy(const ConfigSpace& space, const cost_model::FeatureExtractor& features,
                         ModelPolicyOptions options)
    : space_(space),
      options_(std::move(options)),
      features_(features),
      annealer_(space, options_.annealing),
      model_(features.schema(), options_.model) {
  reset(0);
}

void ModelPolicy::reset(uint64_t seed) {
  rng_.seed(seed);
  seed_ = seed;
  annealer_.reset();
  cost_model::RankModelOptions mo = options_.model;
  mo.seed = seed;
  model_ = cost_model::RankModel(features_.extractor().schema(), mo);
  visited_.clear();
  row_of_.clear();
  observed_.clear();
  throughput_.clear();
  new_since_fit_ = 0;
  fits_ = 0;
  margin_weight_ = 0;
  score_.clear();
  members_.clear();
  member_row_.clear();
  member_z_.clear();
  plan_.clear();
  plan_next_ = 0;
}

void ModelPolicy::observe(const std::vector<Config>& configs,
                          const std::vector<MeasureResult>& results) {
  for (size_t i = 0; i < configs.size(); ++i) {
    uint64_t index = configs[i].index();
    visited_.insert(index);
    double t = throughput_of(results[i]);
    auto [it, fresh] = row_of_.emplace(index, observed_.size());
    if (fresh) {
      observed_.push_back(configs[i]);
      throughput_.push_back(t);
    } else {
      throughput_[it->second] = std::max(throughput_[it->second], t);
    }
    ++new_since_fit_;
  }
}

std::vector<float> ModelPolicy::transfer_margin(const std::vector<Config>& configs) {
  std::vector<float> out(configs.size(), 0.0f);
  if (!options_.transfer) return out;
  std::vector<Config> missing;
  for (const Config& c : configs) {
    if (!global_score_.contains(c.index())) missing.push_back(c);
  }
  if (!missing.empty()) {
    std::vector<float> g = options_.transfer->predict(features_.matrix(missing));
    for (size_t i = 0; i < missing.size(); ++i) global_score_[missing[i].index()] = g[i];
  }
  for (size_t i = 0; i < configs.size(); ++i) {
    out[i] = static_cast<float>(margin_weight_) * global_score_[configs[i].index()];
  }
  return out;
}

std::vector<size_t> ModelPolicy::member_rows(const std::vector<Config>& configs) {
  const size_t m = members_.size();
  std::vector<Config> missing;
  std::unordered_set<uint64_t> asked;
  for (const Config& c : configs) {
    if (!member_row_.contains(c.index()) && asked.insert(c.index()).second) missing.push_back(c);
  }
  if (!missing.empty()) {
    cost_model::FeatureMatrix x = features_.matrix(missing);
    std::vector<float> margin = transfer_margin(missing);
    size_t base = member_z_.size();
    member_z_.resize(base + missing.size() * m);
    for (size_t k = 0; k < m; ++k) {
      std::vector<float> s = members_[k].model.predict(x, margin);
      for (size_t i = 0; i < missing.size(); ++i) {
        member_z_[base + i * m + k] =
            static_cast<float>((s[i] - members_[k].mean) / members_[k].scale);
      }
    }
    for (size_t i = 0; i < missing.size(); ++i) member_row_[missing[i].index()] = base + i * m;
  }
  std::vector<size_t> out(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) out[i] = member_row_[configs[i].index()];
  return out;
}

std::vector<std::vector<float>> ModelPolicy::member_scores(const std::vector<Config>& configs) {
  if (!ensemble() || members_.empty()) return {};
  std::vector<size_t> rows = member_rows(configs);
  std::vector<std::vector<float>> out(members_.size(), std::vector<float>(configs.size()));
  for (size_t k = 0; k < members_.size(); ++k) {
    for (size_t i = 0; i < configs.size(); ++i) out[k][i] = member_z_[rows[i] + k];
  }
  return out;
}

std::vector<float> ModelPolicy::predict(const std::vector<Config>& configs) {
  std::vector<float> out(configs.size());
  if (ensemble() && !members_.empty()) {
    const size_t m = members_.size();
    const double kappa = options_.acquisition == Acquisition::ucb ? options_.kappa : 0.0;
    std::vector<size_t> rows = member_rows(configs);
    for (size_t i = 0; i < configs.size(); ++i) {
      const float* z = &member_z_[rows[i]];
      double sum = 0, sq = 0;
      for (size_t k = 0; k < m; ++k) sum += z[k];
      double mean = sum / m;
      for (size_t k = 0; k < m; ++k) sq += (z[k] - mean) * (z[k] - mean);
      double sd = m > 1 ? std::sqrt(sq / (m - 1)) : 0.0;
      out[i] = static_cast<float>(mean + kappa * sd);
    }
    return out;
  }
  if (!model_.trained() && !options_.transfer) return {};
  std::vector<Config> missing;
  std::unordered_set<uint64_t> asked;
  for (const Config& c : configs) {
    if (!score_.contains(c.index()) && asked.insert(c.index()).second) missing.push_back(c);
  }
  if (!missing.empty()) {
    std::vector<float> margin = transfer_margin(missing);
    std::vector<float> s = model_.trained() ? model_.predict(features_.matrix(missing), margin)
                                            : margin;
    for (size_t i = 0; i < missing.size(); ++i) score_[missing[i].index()] = s[i];
  }
  for (size_t i = 0; i < configs.size(); ++i) out[i] = score_[configs[i].index()];
  return out;
}

void ModelPolicy::refit_and_plan() {
  new_since_fit_ = 0;
  score_.clear();
  std::vector<float> labels = normalised_labels(throughput_);
  bool any_ok = std::any_of(labels.begin(), labels.end(), [](float v) { return v > 0; });
  if (options_.transfer) {
    margin_weight_ = options_.transfer->weight(static_cast<int>(observed_.size()));
  }
  if (any_ok) {
    cost_model::FeatureMatrix x = features_.matrix(observed_);
    std::vector<float> margin;
    if (options_.transfer) margin = transfer_margin(observed_);
    if (ensemble()) {
      fit_ensemble(x, labels, margin);
    } else {
      model_.fit(x, labels, {}, margin);
    }
    ++fits_;
  }
  plan();
}

void ModelPolicy::fit_ensemble(const cost_model::FeatureMatrix& x,
                               const std::vector<float>& labels,
                               const std::vector<float>& margin) {
  members_.clear();
  member_row_.clear();
  member_z_.clear();
  const int n = x.rows;
  const int count = std::max(1, options_.ensemble);
  // Its own stream, so that the bootstrap draws depend only on the seed and the fit.
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(fits_));
  std::uniform_int_distribution<int> pick(0, n - 1);
  for (int k = 0; k < count; ++k) {
    std::vector<int> rows(n);
    bool any_ok = false;
    for (int& r : rows) {
      r = pick(rng);
      any_ok |= labels[r] > 0;
    }
    if (!any_ok) std::iota(rows.begin(), rows.end(), 0);  // nothing to rank: take them all
    std::vector<float> l(n), mg;
    for (int i = 0; i < n; ++i) l[i] = labels[rows[i]];
    if (!margin.empty()) {
      mg.resize(n);
      for (int i = 0; i < n; ++i) mg[i] = margin[rows[i]];
    }
    cost_model::RankModelOptions mo = options_.model;
    mo.seed = rng();
    Member member{cost_model::RankModel(features_.extractor().schema(), mo)};
    member.model.fit(cost_model::select_rows(x, rows), l, {}, mg);
    std::vector<float> s = member.model.predict(x, margin);
    double sum = 0, sq = 0;
    for (float v : s) sum += v;
    member.mean = sum / n;
    for (float v : s) sq += (v - member.mean) * (v - member.mean);
    member.scale = std::max(std::sqrt(sq / n), 1e-6);
    members_.push_back(std::move(member));
  }
}

std::vector<Config> ModelPolicy::plan_thompson() {
  const size_t m = members_.size();
  std::vector<std::vector<Config>> lists(m);
  for (size_t k = 0; k < m; ++k) {
    ScoreFunction score = [this, k](const std::vector<Config>& cs) {
      std::vector<size_t> rows = member_rows(cs);
      std::vector<float> out(cs.size());
      for (size_t i = 0; i < cs.size(); ++i) out[i] = member_z_[rows[i] + k];
      return out;
    };
    lists[k] = annealer_.find_best(score, options_.plan_size, visited_, rng_);
  }
  std::vector<Config> out;
  std::unordered_set<uint64_t> taken;
  std::vector<size_t> next(m, 0);
  std::uniform_int_distribution<size_t> member(0, m - 1);
  while (static_cast<int>(out.size()) < options_.plan_size) {
    size_t k = member(rng_);
    // That member's best not taken yet; if it has none left, the next member's.
    bool found = false;
    for (size_t tries = 0; tries < m && !found; ++tries, k = (k + 1) % m) {
      while (next[k] < lists[k].size() && taken.contains(lists[k][next[k]].index())) ++next[k];
      if (next[k] < lists[k].size()) {
        taken.insert(lists[k][next[k]].index());
        out.push_back(lists[k][next[k]++]);
        found = true;
      }
    }
    if (!found) break;
  }
  return out;
}

void ModelPolicy::plan() {
  plan_.clear();
  plan_next_ = 0;
  if (!trained() && !options_.transfer) return;
  if (options_.acquisition == Acquisition::thompson && trained()) {
    plan_ = plan_thompson();
    return;
  }
  int want = options_.diversity ? options_.plan_size * 3 : options_.plan_size;
  ScoreFunction score = [this](const std::vector<Config>& cs) { return predict(cs); };
  std::vector<Config> found = annealer_.find_best(score, want, visited_, rng_);
  if (!options_.diversity) {
    plan_ = std::move(found);
    return;
  }
  std::set<std::pair<int, int32_t>> covered;  // (knob, entity) pairs the plan holds
  std::vector<bool> taken(found.size(), false);
  const double knobs = static_cast<double>(space_.knobs().size());
  while (static_cast<int>(plan_.size()) < options_.plan_size && plan_.size() < found.size()) {
    double best_gain = -1;
    size_t best = 0;
    for (size_t i = 0; i < found.size(); ++i) {
      if (taken[i]) continue;
      int fresh = 0;
      const auto& e = found[i].entities();
      for (size_t k = 0; k < e.size(); ++k) fresh += !covered.contains({int(k), e[k]});
      double gain = 1.0 - double(i) / double(found.size()) + fresh / knobs;
      if (gain > best_gain) {
        best_gain = gain;
        best = i;
      }
    }
    taken[best] = true;
    const auto& e = found[best].entities();
    for (size_t k = 0; k < e.size(); ++k) covered.insert({int(k), e[k]});
    plan_.push_back(found[best]);
  }
}

std::vector<Config> ModelPolicy::propose(int batch) {
  bool stale = new_since_fit_ >= options_.plan_size || (plan_next_ >= plan_.size() &&
                                                        new_since_fit_ > 0);
  if (stale || (fits_ == 0 && plan_.empty() && options_.transfer)) refit_and_plan();

  std::vector<Config> out;
  std::uniform_real_distribution<double> u(0, 1);
  while (static_cast<int>(out.size()) < batch) {
    bool explore = plan_next_ >= plan_.size() || u(rng_) < options_.epsilon;
    std::optional<Config> c;
    if (!explore) {
      while (plan_next_ < plan_.size() && visited_.contains(plan_[plan_next_].index())) {
        ++plan_next_;
      }
      if (plan_next_ < plan_.size()) c = plan_[plan_next_++];
    }
    if (!c) c = draw_unvisited(space_, visited_, rng_);
    if (!c) break;
    visited_.insert(c->index());
    out.push_back(std::move(*c));
  }
  return out;
}

std::unique_ptr<SearchPolicy> make_model_policy(const ConfigSpace& space,
                                                const cost_model::FeatureExtractor& features,
                                                ModelPolicyOptions options) {
  return std::make_unique<ModelPolicy>(space, features, std::move(options));
}

}  // namespace cutune
