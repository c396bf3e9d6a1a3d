#include "src/tune/model/surrogate.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <numeric>
#include <random>
#include <unordered_set>

#include "src/tune/transfer_model.h"

namespace cutune {

namespace {

// Of `trees` still to grow over `parts` rounds, those the first of them grows.
int split_share(int trees, int parts) { return (trees + parts - 1) / std::max(parts, 1); }

// The scores of `configs` from `cache`; the ones it lacks are computed once each, together,
// by `score` (a function of the missing configurations, one score each) and kept there.
template <class Score>
std::vector<float> cached_scores(std::unordered_map<uint64_t, float>& cache,
                                 const std::vector<Config>& configs, Score&& score) {
  std::vector<Config> missing;
  std::unordered_set<uint64_t> asked;
  for (const Config& c : configs) {
    if (!cache.contains(c.index()) && asked.insert(c.index()).second) missing.push_back(c);
  }
  if (!missing.empty()) {
    std::vector<float> s = score(missing);
    for (size_t i = 0; i < missing.size(); ++i) cache[missing[i].index()] = s[i];
  }
  std::vector<float> out(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) out[i] = cache[configs[i].index()];
  return out;
}

}  // namespace

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

cost_model::RankModelOptions main_model_options(const ModelPolicyOptions& o,
                                                std::string_view schema) {
  cost_model::RankModelOptions mo = o.model;
  if (schema.starts_with("ir/")) {
    if (o.ir_rounds > 0) mo.rounds = std::min(mo.rounds, o.ir_rounds);
    if (o.ir_max_depth > 0) mo.max_depth = std::min(mo.max_depth, o.ir_max_depth);
  }
  return mo;
}

bool cascade_on(const ModelPolicyOptions& o, std::string_view schema) {
  return o.cascade.survivors_for(schema) > 0;
}

Surrogate::Surrogate(const ConfigSpace& space, const cost_model::FeatureExtractor& features,
                     const ModelPolicyOptions& options)
    : space_(space),
      options_(options),
      model_options_(main_model_options(options, features.schema())),
      survivors_(options.cascade.survivors_for(features.schema())),
      features_(features) {
  if (cascade_on(options_, features.schema())) {
    cost_model::RankModelOptions mo = options_.model;
    if (options_.cascade.rounds > 0) mo.rounds = options_.cascade.rounds;
    if (options_.cascade.max_depth > 0) mo.max_depth = options_.cascade.max_depth;
    cascade_ = std::make_unique<KnobSurrogate>(space, mo, options_.cascade.ensemble);
  }
}

void Surrogate::reset(uint64_t seed) {
  seed_ = seed;
  fits_ = warm_fits_ = full_fit_rows_ = 0;
  pending_trees_ = pending_parts_ = cascade_pending_ = 0;
  margin_weight_ = 0;
  margin_score_.clear();
  members_.clear();
  member_row_.clear();
  member_z_.clear();
  gp_ = cost_model::GaussianProcess();
  gp_score_.clear();
  if (cascade_) cascade_->reset();
}

void Surrogate::refit(std::span<const Config> records, std::span<const double> throughput,
                      RoundTimes& times) {
  const int n = static_cast<int>(records.size());
  margin_score_.clear();
  const std::vector<float> labels = normalised_labels(throughput);
  const bool any_ok = std::any_of(labels.begin(), labels.end(), [](float v) { return v > 0; });
  if (options_.margin()) margin_weight_ = options_.margin()->weight(n);
  double t0 = thread_cpu_seconds();
  auto lap = [&t0](double& into) {
    const double t = thread_cpu_seconds();
    into = t - t0;
    t0 = t;
  };
  if (any_ok) {
    cost_model::FeatureMatrix x = features_.matrix(records);
    lap(times.features);
    std::vector<float> margin;
    if (options_.margin()) margin = margin_scores({records.begin(), records.end()});
    int trees = 0;
    for (const Member& m : members_) trees = std::max(trees, m.model.trees());
    const RefitOptions& r = options_.refit;
    const bool under_cap =
        r.max_tree_growth <= 0 || trees + r.warm_trees <= r.max_tree_growth * model_options_.rounds;
    const bool warm =
        r.warm_trees > 0 && trained() && n < (1.0 + r.growth) * full_fit_rows_ && under_cap;
    fit_ensemble(x, labels, margin, warm);
    if (!warm) full_fit_rows_ = n;
    warm_fits_ += warm;
    ++fits_;
    lap(times.fit);
    if (cascade_) fit_cascade(records, labels, warm);
    lap(times.cascade);
  }
  gp_ = cost_model::GaussianProcess();
  gp_score_.clear();
  // Not with a margin source (a transfer model, the prior): its margin ranks the first rounds.
  if (any_ok && n < options_.gp_until && !options_.margin()) fit_gp(records, labels);
}

std::vector<float> Surrogate::margin_scores(const std::vector<Config>& configs) {
  std::vector<float> out = cached_scores(source_score_, configs, [&](const auto& missing) {
    return options_.margin()->predict(features_.matrix(missing));
  });
  for (float& v : out) v *= static_cast<float>(margin_weight_);
  return out;
}

void Surrogate::fit_ensemble(const cost_model::FeatureMatrix& x, const std::vector<float>& labels,
                             const std::vector<float>& margin, bool warm) {
  if (!warm) members_.clear();
  member_row_.clear();
  member_z_.clear();
  const int n = x.rows;
  const RefitOptions& r = options_.refit;
  // Trees a member grows now: a split fit from scratch a share of them, each of the next
  // split_parts - 1 refits a share of the rest (instead of its warm trees).
  int fit_trees = model_options_.rounds;
  int warm_grow = r.warm_trees;
  if (warm && pending_trees_ > 0) {
    warm_grow = split_share(pending_trees_, pending_parts_);
    pending_trees_ -= warm_grow;
    --pending_parts_;
  } else {
    pending_trees_ = pending_parts_ = 0;
  }
  // Only where the next refits are sure to be warm ones: a round adds at most plan_size
  // records, under growth times these.
  if (!warm && r.split_from > 0 && n >= r.split_from && r.warm_trees > 0 &&
      r.growth * n > (r.split_parts - 1) * options_.plan_size) {
    fit_trees = split_share(model_options_.rounds, r.split_parts);
    pending_trees_ = model_options_.rounds - fit_trees;
    pending_parts_ = r.split_parts - 1;
  }
  // Its own stream, so that the bootstrap draws depend only on the seed and the fit.
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(fits_));
  std::uniform_int_distribution<int> pick(0, n - 1);
  // Every member's rows are drawn from x, so the columns worth splitting on are looked for
  // among x's once, instead of among all of them for each member (the same columns).
  std::vector<int> candidates;
  if (!warm && model_options_.drop_redundant_columns) {
    candidates = cost_model::splittable_columns(x, model_options_.max_bin);
  }
  for (int k = 0; k < std::max(1, options_.ensemble); ++k) {
    std::vector<int> rows(n);
    bool any_ok = false;
    for (int& row : rows) {
      row = pick(rng);
      any_ok |= labels[row] > 0;
    }
    if (!any_ok) std::iota(rows.begin(), rows.end(), 0);  // nothing to rank: take them all
    std::vector<float> l(n), mg;
    for (int i = 0; i < n; ++i) l[i] = labels[rows[i]];
    if (!margin.empty()) {
      mg.resize(n);
      for (int i = 0; i < n; ++i) mg[i] = margin[rows[i]];
    }
    cost_model::RankModelOptions mo = model_options_;
    mo.seed = rng();
    mo.rounds = fit_trees;
    if (warm) {
      members_[k].model.boost(cost_model::select_rows(x, rows), l, warm_grow, {}, mg);
    } else {
      members_.push_back(Member{cost_model::RankModel(features_.extractor().schema(), mo)});
      members_.back().model.fit_among(cost_model::select_rows(x, rows), candidates, l, {}, mg);
    }
    Member& member = members_[k];
    std::vector<float> s = member.model.predict(x, margin);
    double sum = 0, sq = 0;
    for (float v : s) sum += v;
    member.mean = sum / n;
    for (float v : s) sq += (v - member.mean) * (v - member.mean);
    member.scale = std::max(std::sqrt(sq / n), 1e-6);
  }
}

void Surrogate::fit_cascade(std::span<const Config> records, const std::vector<float>& labels,
                            bool warm) {
  int trees =
      options_.cascade.warm_trees > 0 ? options_.cascade.warm_trees : options_.refit.warm_trees;
  // Split as the ensemble's fit was, over the same rounds: this one and the pending_parts_
  // left after it; fit_trees 0: a whole fit.
  int fit_trees = 0;
  if (warm && cascade_pending_ > 0) {
    trees = split_share(cascade_pending_, pending_parts_ + 1);
    cascade_pending_ -= trees;
  } else if (!warm && pending_trees_ > 0) {
    fit_trees = split_share(cascade_->rounds(), pending_parts_ + 1);
    cascade_pending_ = cascade_->rounds() - fit_trees;
  } else {
    cascade_pending_ = 0;
  }
  cascade_->fit(records, labels, warm, trees, seed_, fits_, options_.kappa, fit_trees);
}

std::vector<double> Surrogate::unit_points(std::span<const Config> configs) const {
  const auto& knobs = space_.knobs();
  const size_t d = knobs.size();
  std::vector<double> out(configs.size() * d);
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& e = configs[i].entities();
    for (size_t k = 0; k < d; ++k) {
      const int64_t card = knobs[k].cardinality();
      out[i * d + k] = card > 1 ? double(e[k]) / double(card - 1) : 0.0;
    }
  }
  return out;
}

void Surrogate::fit_gp(std::span<const Config> records, const std::vector<float>& labels) {
  // Failures at the least measured throughput rather than 0: a cliff of zeros next to a
  // good configuration would bend the whole surface down around it.
  float least = 1.0f;
  for (float v : labels) {
    if (v > 0) least = std::min(least, v);
  }
  std::vector<double> y(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) y[i] = labels[i] > 0 ? labels[i] : least;
  gp_.fit(unit_points(records), static_cast<int>(space_.knobs().size()), y);
}

std::vector<size_t> Surrogate::member_rows(const std::vector<Config>& configs) {
  const size_t m = members_.size();
  std::vector<Config> missing;
  std::unordered_set<uint64_t> asked;
  for (const Config& c : configs) {
    if (!member_row_.contains(c.index()) && asked.insert(c.index()).second) missing.push_back(c);
  }
  if (!missing.empty()) {
    cost_model::FeatureMatrix x = features_.matrix(missing);
    // No margin without a margin source, as at the fit: the booster's base score then.
    std::vector<float> margin;
    if (options_.margin()) margin = margin_scores(missing);
    const size_t base = member_z_.size();
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

std::vector<float> Surrogate::acquisition(const std::vector<Config>& configs) {
  if (gp_.trained()) {
    return cached_scores(gp_score_, configs, [&](const std::vector<Config>& missing) {
      std::vector<double> mean, sd;
      gp_.predict(unit_points(missing), mean, sd);
      std::vector<float> s(missing.size());
      for (size_t i = 0; i < s.size(); ++i) {
        s[i] = static_cast<float>(mean[i] + options_.gp_kappa * sd[i]);
      }
      return s;
    });
  }
  if (trained()) {
    const size_t m = members_.size();
    const std::vector<size_t> rows = member_rows(configs);
    std::vector<float> out(configs.size());
    for (size_t i = 0; i < configs.size(); ++i) {
      const float* z = &member_z_[rows[i]];
      double sum = 0, sq = 0;
      for (size_t k = 0; k < m; ++k) sum += z[k];
      const double mean = sum / m;
      for (size_t k = 0; k < m; ++k) sq += (z[k] - mean) * (z[k] - mean);
      const double sd = m > 1 ? std::sqrt(sq / (m - 1)) : 0.0;
      out[i] = static_cast<float>(mean + options_.kappa * sd);
    }
    return out;
  }
  if (!options_.margin()) return {};
  return cached_scores(margin_score_, configs, [&](const std::vector<Config>& missing) {
    return margin_scores(missing);
  });
}

std::vector<std::vector<float>> Surrogate::member_scores(const std::vector<Config>& configs) {
  if (!trained()) return {};
  const std::vector<size_t> rows = member_rows(configs);
  std::vector<std::vector<float>> out(members_.size(), std::vector<float>(configs.size()));
  for (size_t k = 0; k < members_.size(); ++k) {
    for (size_t i = 0; i < configs.size(); ++i) out[k][i] = member_z_[rows[i] + k];
  }
  return out;
}

std::vector<int> Surrogate::member_trees() const {
  std::vector<int> out;
  for (const Member& m : members_) out.push_back(m.model.trees());
  return out;
}

std::vector<int> Surrogate::surrogate_trees() const {
  return cascade_ ? cascade_->member_trees() : std::vector<int>{};
}

}  // namespace cutune
