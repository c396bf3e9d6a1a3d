#include "src/tune/model_policy.h"

#include <algorithm>
#include <set>

namespace cutune {

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

std::vector<float> ModelPolicy::predict(const std::vector<Config>& configs) {
  std::vector<float> out(configs.size());
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
    model_.fit(x, labels, {}, margin);
    ++fits_;
  }
  plan();
}

void ModelPolicy::plan() {
  plan_.clear();
  plan_next_ = 0;
  if (!model_.trained() && !options_.transfer) return;
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
