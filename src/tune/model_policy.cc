#include "src/tune/model_policy.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>

namespace cutune {

std::string_view to_string(Acquisition a) {
  switch (a) {
    case Acquisition::mean:
      return "mean";
    case Acquisition::ucb:
      return "ucb";
    case Acquisition::thompson:
      return "thompson";
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

namespace {

// A random unmeasured valid configuration whose choice knobs each sit, with probability `bias`,
// at their smallest or largest value (half each), and otherwise anywhere ("A first batch toward
// the bounds" in the header); nothing after 1,000 draws that were all invalid or measured.
std::optional<Config> draw_toward_bounds(const ConfigSpace& space,
                                         const std::unordered_set<uint64_t>& visited,
                                         std::mt19937_64& rng, double bias) {
  const auto& knobs = space.knobs();
  std::vector<std::pair<int32_t, int32_t>> bounds(knobs.size(), {-1, -1});
  for (size_t k = 0; k < knobs.size(); ++k) {
    if (knobs[k].kind() != KnobKind::choice) continue;
    const auto& v = knobs[k].values();
    bounds[k] = {static_cast<int32_t>(std::ranges::min_element(v) - v.begin()),
                 static_cast<int32_t>(std::ranges::max_element(v) - v.begin())};
  }
  std::uniform_real_distribution<double> coin(0, 1);
  for (int tries = 0; tries < 1000; ++tries) {
    std::vector<int32_t> e(knobs.size());
    for (size_t k = 0; k < knobs.size(); ++k) {
      const double r = bounds[k].first >= 0 ? coin(rng) : 1;
      if (r < bias / 2)
        e[k] = bounds[k].first;
      else if (r < bias)
        e[k] = bounds[k].second;
      else
        e[k] = std::uniform_int_distribution<int32_t>(0, knobs[k].cardinality() - 1)(rng);
    }
    Config c(&space, std::move(e));
    if (!visited.contains(c.index()) && space.is_valid(c)) return c;
  }
  return std::nullopt;
}

// The knobs in which two configurations differ, counted no further than most + 1.
int knob_changes(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int most) {
  int d = 0;
  for (size_t k = 0; k < a.size() && d <= most; ++k) d += a[k] != b[k];
  return d;
}

// incumbent_stratify: `order` (best first) with `share` of its positions given in turns to the
// sets of knobs the candidates change from the centre (every set's best, then every set's
// second, ...), the others to the rest of `order`, interleaved.
std::vector<size_t> stratified_order(const std::vector<Config>& candidates, const Config& centre,
                                     const std::vector<size_t>& order, double share) {
  const std::vector<int32_t>& base = centre.entities();
  std::map<std::vector<uint32_t>, int32_t> seen;
  std::vector<int32_t> level(candidates.size(), 0);  // how many of its set come before it
  std::vector<uint32_t> changed;
  for (size_t i : order) {
    const std::vector<int32_t>& e = candidates[i].entities();
    changed.clear();
    for (size_t k = 0; k < e.size(); ++k) {
      if (e[k] != base[k]) changed.push_back(static_cast<uint32_t>(k));
    }
    level[i] = seen[changed]++;
  }
  std::vector<size_t> turns = order;
  std::stable_sort(turns.begin(), turns.end(),
                   [&](size_t a, size_t b) { return level[a] < level[b]; });
  share = std::clamp(share, 0.0, 1.0);
  std::vector<char> used(candidates.size(), 0);
  std::vector<size_t> out;
  size_t next[2] = {0, 0};
  for (size_t k = 0; k < order.size(); ++k) {
    const int from_turns = std::floor((k + 1) * share) > std::floor(k * share);
    const std::vector<size_t>& from = from_turns ? turns : order;
    while (used[from[next[from_turns]]]) ++next[from_turns];
    used[from[next[from_turns]]] = 1;
    out.push_back(from[next[from_turns]]);
  }
  return out;
}

// The main model's options: with IR features, at most ir_rounds trees of depth ir_max_depth.
cost_model::RankModelOptions main_model_options(const ModelPolicyOptions& o,
                                                std::string_view schema) {
  cost_model::RankModelOptions mo = o.model;
  if (schema.starts_with("ir/")) {
    if (o.ir_rounds > 0) mo.rounds = std::min(mo.rounds, o.ir_rounds);
    if (o.ir_max_depth > 0) mo.max_depth = std::min(mo.max_depth, o.ir_max_depth);
  }
  return mo;
}

// Whether the annealing runs on the cascade's surrogate: survivors for these features, and an
// acquisition other than Thompson sampling (which anneals on each member instead).
bool cascade_on(const ModelPolicyOptions& o, std::string_view schema) {
  return o.cascade.survivors_for(schema) > 0 && o.acquisition != Acquisition::thompson;
}

// The annealing's options: with a cascade, at most cascade.chains chains.
AnnealingOptions resolve_annealing(const ModelPolicyOptions& o, std::string_view schema) {
  AnnealingOptions a = o.annealing;
  if (cascade_on(o, schema) && o.cascade.chains > 0) {
    a.chains = std::min(a.chains, o.cascade.chains);
  }
  return a;
}

// Of `trees` still to grow over `parts` rounds, those the first of them grows (a split fit from
// scratch: ModelPolicyOptions::split_refit_from, split_refit_parts).
int split_share(int trees, int parts) { return (trees + parts - 1) / std::max(parts, 1); }

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

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

ModelPolicy::ModelPolicy(const ConfigSpace& space, const cost_model::FeatureExtractor& features,
                         ModelPolicyOptions options)
    : space_(space),
      options_(std::move(options)),
      model_options_(main_model_options(options_, features.schema())),
      features_(features),
      annealer_(space, resolve_annealing(options_, features.schema())),
      model_(features.schema(), model_options_),
      budget_(options_.budget) {
  options_.cascade.survivors = options_.cascade.survivors_for(features.schema());
  if (cascade_on(options_, features.schema())) {
    cost_model::RankModelOptions mo = options_.model;
    if (options_.cascade.rounds > 0) mo.rounds = options_.cascade.rounds;
    if (options_.cascade.max_depth > 0) mo.max_depth = options_.cascade.max_depth;
    cascade_ = std::make_unique<KnobSurrogate>(space, mo, options_.cascade.ensemble);
  }
  reset(0);
}

void ModelPolicy::reset(uint64_t seed) {
  rng_.seed(seed);
  seed_ = seed;
  annealer_.reset();
  cost_model::RankModelOptions mo = model_options_;
  mo.seed = seed;
  model_ = cost_model::RankModel(features_.extractor().schema(), mo);
  visited_.clear();
  row_of_.clear();
  observed_.clear();
  throughput_.clear();
  new_since_fit_ = 0;
  fits_ = 0;
  warm_fits_ = 0;
  full_fit_rows_ = 0;
  pending_trees_ = 0;
  pending_parts_ = 0;
  cascade_pending_ = 0;
  margin_weight_ = 0;
  score_.clear();
  members_.clear();
  member_row_.clear();
  member_z_.clear();
  plan_.clear();
  plan_next_ = 0;
  round_size_ = 0;
  min_round_ = 0;
  proposed_since_fit_ = 0;
  kappa_ = options_.acquisition == Acquisition::ucb ? options_.kappa : 0.0;
  agreement_ = 1;
  design_.clear();
  design_next_ = 0;
  random_made_ = 0;
  best_at_plan_ = 0;
  stalled_ = 0;
  basin_reference_ = 0;
  basin_stalled_ = 0;
  incumbent_share_ = 0;
  origin_.clear();
  credit_picks_[0] = credit_picks_[1] = credit_hits_[0] = credit_hits_[1] = 0;
  if (cascade_) cascade_->reset();
  survivors_.clear();
  incumbent_ring_left_ = 1;
  chain_.clear();
  gp_ = cost_model::GaussianProcess();
  gp_score_.clear();
  // incumbent_random keeps no state: its draws come from rng_, seeded above.
}

void ModelPolicy::observe(const std::vector<Config>& configs,
                          const std::vector<MeasureResult>& results) {
  // Credit: the throughput a hit must reach, from the records before this batch.
  double hit_at = std::numeric_limits<double>::infinity();
  if (options_.credit_top > 0 && !origin_.empty() && !throughput_.empty()) {
    std::vector<double> sorted = throughput_;
    size_t k = std::min(sorted.size() - 1,
                        static_cast<size_t>(options_.credit_top * sorted.size()));
    std::nth_element(sorted.begin(), sorted.begin() + k, sorted.end(), std::greater<>());
    hit_at = std::max(sorted[k], 1e-300);
  }
  for (size_t i = 0; i < configs.size(); ++i) {
    uint64_t index = configs[i].index();
    visited_.insert(index);
    double t = throughput_of(results[i]);
    if (auto o = origin_.find(index); o != origin_.end()) {
      credit_picks_[o->second] += 1;
      credit_hits_[o->second] += t >= hit_at;
      origin_.erase(o);
    }
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
  if (!options_.transfer) return std::vector<float>(configs.size(), 0.0f);
  std::vector<float> out = cached_scores(global_score_, configs, [&](const auto& missing) {
    return options_.transfer->predict(features_.matrix(missing));
  });
  for (float& v : out) v *= static_cast<float>(margin_weight_);
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
    // No margin without a transfer model, as at the fit: the booster's base score then, not
    // 0 (which would shift each member's standardised scores by base_score / scale).
    std::vector<float> margin;
    if (options_.transfer) margin = transfer_margin(missing);
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

std::vector<int> ModelPolicy::member_trees() const {
  std::vector<int> out;
  for (const Member& m : members_) out.push_back(m.model.trees());
  return out;
}

std::vector<int> ModelPolicy::surrogate_trees() const {
  return cascade_ ? cascade_->member_trees() : std::vector<int>{};
}

std::vector<float> ModelPolicy::predict(const std::vector<Config>& configs) {
  if (gp_.trained()) {
    return cached_scores(gp_score_, configs, [&](const std::vector<Config>& missing) {
      std::vector<double> mean, sd;
      gp_.predict(unit_point(missing), mean, sd);
      std::vector<float> s(missing.size());
      for (size_t i = 0; i < s.size(); ++i) {
        s[i] = static_cast<float>(mean[i] + options_.gp_kappa * sd[i]);
      }
      return s;
    });
  }
  if (ensemble() && !members_.empty()) {
    const size_t m = members_.size();
    const double kappa = options_.acquisition == Acquisition::ucb ? kappa_ : 0.0;
    std::vector<size_t> rows = member_rows(configs);
    std::vector<float> out(configs.size());
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
  return cached_scores(score_, configs, [&](const std::vector<Config>& missing) {
    std::vector<float> margin = transfer_margin(missing);
    if (!options_.transfer) margin.clear();  // the base score, as at the fit
    return model_.trained() ? model_.predict(features_.matrix(missing), margin) : margin;
  });
}

void ModelPolicy::refit_and_plan() {
  new_since_fit_ = 0;
  proposed_since_fit_ = 0;
  const int n = static_cast<int>(observed_.size());
  round_size_ = std::clamp(static_cast<int>(options_.round_fraction * n),
                           std::min(std::max(options_.min_batch, min_round_), options_.plan_size),
                           options_.plan_size);
  score_.clear();
  std::vector<float> labels = normalised_labels(throughput_);
  bool any_ok = std::any_of(labels.begin(), labels.end(), [](float v) { return v > 0; });
  if (options_.transfer) {
    margin_weight_ = options_.transfer->weight(static_cast<int>(observed_.size()));
  }
  round_times_ = {};
  double t0 = thread_cpu_seconds();
  auto lap = [&t0](double& into) {
    const double t = thread_cpu_seconds();
    into = t - t0;
    t0 = t;
  };
  if (any_ok) {
    cost_model::FeatureMatrix x = features_.matrix(observed_);
    lap(round_times_.features);
    std::vector<float> margin;
    if (options_.transfer) margin = transfer_margin(observed_);
    // A warm fit continues the boosters unless the records have grown by refit_growth since
    // the last fit from scratch, or the boosters would pass max_tree_growth times their trees
    // at a fit from scratch.
    int trees = model_.trees();
    for (const Member& m : members_) trees = std::max(trees, m.model.trees());
    const bool under_cap = options_.max_tree_growth <= 0 ||
                           trees + options_.warm_trees <=
                               options_.max_tree_growth * model_options_.rounds;
    const bool warm = options_.warm_trees > 0 && trained() &&
                      n < (1.0 + options_.refit_growth) * full_fit_rows_ && under_cap;
    if (ensemble()) {
      fit_ensemble(x, labels, margin, warm);
    } else if (warm) {
      model_.boost(x, labels, options_.warm_trees, {}, margin);
    } else {
      model_.fit(x, labels, {}, margin);
    }
    if (!warm) full_fit_rows_ = n;
    warm_fits_ += warm;
    ++fits_;
    measure_agreement();
    lap(round_times_.fit);
    if (cascade_) {
      int trees =
          options_.cascade.warm_trees > 0 ? options_.cascade.warm_trees : options_.warm_trees;
      // Split as the main model's fit was (split_refit_from, split_refit_parts), over the same
      // rounds: this one and the pending_parts_ left after it; fit_trees 0: a whole fit.
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
      cascade_->fit(observed_, labels, warm, trees, seed_, fits_, kappa_, fit_trees);
    }
    lap(round_times_.cascade);
  }
  gp_ = cost_model::GaussianProcess();
  gp_score_.clear();
  // Not with a transfer model: its margin is what ranks the first rounds then.
  if (any_ok && n < options_.gp_until && !options_.transfer) fit_gp(labels);
  plan();
  lap(round_times_.plan);
}

std::vector<double> ModelPolicy::unit_point(const std::vector<Config>& configs) const {
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

void ModelPolicy::fit_gp(const std::vector<float>& labels) {
  // Failures at the least measured throughput rather than 0: a cliff of zeros next to a
  // good configuration would bend the whole surface down around it.
  float least = 1.0f;
  for (float v : labels) {
    if (v > 0) least = std::min(least, v);
  }
  std::vector<double> y(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) y[i] = labels[i] > 0 ? labels[i] : least;
  gp_.fit(unit_point(observed_), static_cast<int>(space_.knobs().size()), y);
}

void ModelPolicy::measure_agreement() {
  kappa_ = options_.acquisition == Acquisition::ucb ? options_.kappa : 0.0;
  if (!ensemble() || members_.size() < 2 || !options_.adaptive_kappa) return;
  // Members' scores on a sample of unvisited configurations; its own stream, so that the
  // proposals' random draws do not depend on it.
  std::mt19937_64 rng(seed_ * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(fits_));
  std::vector<Config> sample;
  std::unordered_set<uint64_t> in_sample;
  for (int tries = 0; tries < 1024 && sample.size() < 256; ++tries) {
    std::optional<Config> c = space_.sample_valid(rng, 1000);
    if (!c) break;
    if (!visited_.contains(c->index()) && in_sample.insert(c->index()).second) {
      sample.push_back(std::move(*c));
    }
  }
  if (sample.size() < 8) return;
  std::vector<std::vector<float>> z = member_scores(sample);
  const size_t m = z.size(), n = sample.size();
  std::vector<double> mean(m, 0), sd(m, 0);
  for (size_t k = 0; k < m; ++k) {
    for (float v : z[k]) mean[k] += v;
    mean[k] /= n;
    for (float v : z[k]) sd[k] += (v - mean[k]) * (v - mean[k]);
    sd[k] = std::sqrt(sd[k] / n);
  }
  double sum = 0;
  int pairs = 0;
  for (size_t a = 0; a < m; ++a) {
    for (size_t b = a + 1; b < m; ++b) {
      double c = 0;
      for (size_t i = 0; i < n; ++i) c += (z[a][i] - mean[a]) * (z[b][i] - mean[b]);
      double denom = n * sd[a] * sd[b];
      sum += denom > 1e-12 ? c / denom : 1.0;  // a constant member agrees with nothing to rank
      ++pairs;
    }
  }
  agreement_ = pairs ? sum / pairs : 1.0;
  // Exploring pays only while budget is left to exploit what it finds: full weight until the
  // last quarter of the budget, then falling linearly to 0.
  double left = 1.0;
  if (budget_ > 0) {
    left = std::clamp(4.0 * (1.0 - double(observed_.size()) / double(budget_)), 0.0, 1.0);
  }
  kappa_ = options_.kappa * std::clamp(2.0 * (1.0 - agreement_), 0.5, 1.0) * left;
}

std::vector<float> ModelPolicy::exploit_score(const std::vector<Config>& configs) {
  if (!ensemble() || members_.empty()) return predict(configs);
  const size_t m = members_.size();
  std::vector<size_t> rows = member_rows(configs);
  std::vector<float> out(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    double sum = 0;
    for (size_t k = 0; k < m; ++k) sum += member_z_[rows[i] + k];
    out[i] = static_cast<float>(sum / m);
  }
  return out;
}

std::vector<size_t> ModelPolicy::records_best_first() const {
  std::vector<size_t> order(observed_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return throughput_[a] > throughput_[b]; });
  return order;
}

std::vector<Config> ModelPolicy::local_candidates(int count,
                                                  const std::unordered_set<uint64_t>& exclude) {
  if (count <= 0 || observed_.empty()) return {};
  const std::vector<size_t> order = records_best_first();
  const auto& knobs = space_.knobs();
  std::vector<Config> cands;
  std::unordered_map<uint64_t, int> support;  // candidate -> centres it neighbours
  auto consider = [&](const std::vector<int32_t>& e) {
    Config c(&space_, e);
    uint64_t index = c.index();
    if (exclude.contains(index)) return;
    auto [it, fresh] = support.emplace(index, 0);
    if (fresh) {
      if (!space_.is_valid(c)) {
        it->second = -1;  // invalid: never a candidate
        return;
      }
      cands.push_back(std::move(c));
    }
    if (it->second >= 0) ++it->second;
  };
  // Centres: the local_top best measured, and every other one within 3% of the best (a
  // plateau), at most 8 * local_top.
  std::vector<size_t> centres;
  const double best = throughput_[order[0]];
  for (size_t r = 0; r < order.size() && best > 0; ++r) {
    double t = throughput_[order[r]];
    if (t <= 0) break;
    if (static_cast<int>(r) >= options_.local_top && t < 0.97 * best) break;
    if (static_cast<int>(centres.size()) >= 8 * options_.local_top) break;
    centres.push_back(order[r]);
  }
  // 2-knob neighbourhoods can be large in wide spaces: at most this many per centre, drawn
  // uniformly among them (every one when there are fewer).
  constexpr size_t kMaxPerCentre = 4096;
  std::mt19937_64 rng(seed_ * 0xA24BAED4963EE407ull + static_cast<uint64_t>(fits_));
  for (size_t centre : centres) {
    const std::vector<int32_t> base = observed_[centre].entities();
    std::vector<int64_t> card(knobs.size());
    size_t total = 0;
    for (size_t k = 0; k < knobs.size(); ++k) card[k] = knobs[k].cardinality();
    for (size_t i = 0; i < knobs.size(); ++i) {
      total += card[i] - 1;
      for (size_t j = i + 1; j < knobs.size(); ++j) total += (card[i] - 1) * (card[j] - 1);
    }
    std::vector<int32_t> e = base;
    if (total <= kMaxPerCentre) {
      for (size_t i = 0; i < knobs.size(); ++i) {
        for (int32_t a = 0; a < card[i]; ++a) {
          if (a == base[i]) continue;
          e[i] = a;
          consider(e);
          for (size_t j = i + 1; j < knobs.size(); ++j) {
            for (int32_t b = 0; b < card[j]; ++b) {
              if (b == base[j]) continue;
              e[j] = b;
              consider(e);
            }
            e[j] = base[j];
          }
        }
        e[i] = base[i];
      }
    } else {
      std::vector<size_t> movable;
      for (size_t k = 0; k < knobs.size(); ++k) {
        if (card[k] > 1) movable.push_back(k);
      }
      if (movable.empty()) continue;
      std::uniform_int_distribution<size_t> knob(0, movable.size() - 1);
      for (size_t d = 0; d < kMaxPerCentre; ++d) {
        e = base;
        int changes = 1 + static_cast<int>(d % 2);
        for (int c = 0; c < changes; ++c) {
          size_t k = movable[knob(rng)];
          std::uniform_int_distribution<int64_t> other(0, card[k] - 2);
          int64_t v = other(rng);
          e[k] = static_cast<int32_t>(v >= base[k] ? v + 1 : v);
        }
        consider(e);
      }
    }
  }
  if (cands.empty()) return {};
  // The acquisition (ucb: with the spread), plus the share of centres a candidate neighbours:
  // one that lies between several of the best measured (within two changes of each) is worth
  // measuring even where the model, having seen only the plateau, scores it below.
  std::vector<float> s = predict(cands);
  for (size_t i = 0; i < cands.size(); ++i) {
    s[i] += static_cast<float>(double(support[cands[i].index()]) / double(centres.size()));
  }
  std::vector<size_t> idx(cands.size());
  std::iota(idx.begin(), idx.end(), 0);
  size_t keep = std::min<size_t>(count, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(), [&](size_t a, size_t b) {
    return s[a] != s[b] ? s[a] > s[b] : cands[a].index() < cands[b].index();
  });
  std::vector<Config> out;
  for (size_t i = 0; i < keep; ++i) out.push_back(cands[idx[i]]);
  return out;
}

std::vector<Config> ModelPolicy::incumbent_candidates(int count,
                                                      const std::unordered_set<uint64_t>& exclude) {
  incumbent_ring_left_ = 1;  // not known to be a local optimum until its ring is counted
  if (count <= 0 || observed_.empty()) return {};
  const double best = *std::max_element(throughput_.begin(), throughput_.end());
  if (best <= 0) return {};
  // Exact ties (a plateau) are all incumbents, the first measured first; all of them count
  // for the support below, at most incumbent_centres are centres.
  const size_t max_centres = std::max(1, options_.incumbent_centres);
  std::vector<size_t> ties;
  const double floor = tie_floor(best);
  for (size_t i = 0; i < observed_.size(); ++i) {
    if (throughput_[i] >= floor) ties.push_back(i);
  }
  // Near-ties: the best first, then in the order measured.
  std::stable_sort(ties.begin(), ties.end(), [&](size_t a, size_t b) {
    return (throughput_[a] >= best) > (throughput_[b] >= best);
  });
  std::vector<size_t> centres = ties;
  if (centres.size() > max_centres) centres.resize(max_centres);
  const auto& knobs = space_.knobs();
  std::unordered_set<uint64_t> seen;
  std::vector<Config> ring[2];  // radius 1, radius 2
  std::vector<char> adjacent[2];  // each change one entity position from the centre's
  const std::vector<int32_t>* centre_entities = nullptr;
  auto consider = [&](const std::vector<int32_t>& e, int radius) {
    Config c(&space_, e);
    uint64_t index = c.index();
    if (exclude.contains(index) || !seen.insert(index).second) return;
    if (!space_.is_valid(c)) return;
    bool adj = options_.incumbent_adjacent;  // computed only where it orders the rings
    for (size_t k = 0; adj && k < e.size(); ++k) adj = std::abs(e[k] - (*centre_entities)[k]) <= 1;
    ring[radius - 1].push_back(std::move(c));
    adjacent[radius - 1].push_back(adj);
  };
  // Radius 2 of a wide space can be large: at most this many draws per centre there.
  constexpr size_t kMaxPerCentre = 4096;
  std::mt19937_64 rng(seed_ * 0xBF58476D1CE4E5B9ull + static_cast<uint64_t>(fits_));
  for (size_t centre : centres) {
    const std::vector<int32_t> base = observed_[centre].entities();
    centre_entities = &base;
    std::vector<int32_t> e = base;
    size_t pairs = 0;
    for (size_t i = 0; i < knobs.size(); ++i) {
      for (int32_t a = 0; a < knobs[i].cardinality(); ++a) {
        if (a == base[i]) continue;
        e[i] = a;
        consider(e, 1);
      }
      e[i] = base[i];
      for (size_t j = i + 1; j < knobs.size(); ++j) {
        pairs += size_t(knobs[i].cardinality() - 1) * size_t(knobs[j].cardinality() - 1);
      }
    }
    if (pairs <= kMaxPerCentre) {
      for (size_t i = 0; i < knobs.size(); ++i) {
        for (int32_t a = 0; a < knobs[i].cardinality(); ++a) {
          if (a == base[i]) continue;
          e[i] = a;
          for (size_t j = i + 1; j < knobs.size(); ++j) {
            for (int32_t b = 0; b < knobs[j].cardinality(); ++b) {
              if (b == base[j]) continue;
              e[j] = b;
              consider(e, 2);
            }
            e[j] = base[j];
          }
        }
        e[i] = base[i];
      }
    } else {
      std::vector<size_t> movable;
      for (size_t k = 0; k < knobs.size(); ++k) {
        if (knobs[k].cardinality() > 1) movable.push_back(k);
      }
      if (movable.size() < 2) continue;
      std::uniform_int_distribution<size_t> knob(0, movable.size() - 1);
      // Many centres share the draws (a plateau in a wide space), as many as four had each.
      const size_t draws = std::max<size_t>(256, 4 * kMaxPerCentre / centres.size());
      for (size_t d = 0; d < std::min(kMaxPerCentre, draws); ++d) {
        size_t i = movable[knob(rng)], j = movable[knob(rng)];
        if (i == j) continue;
        e = base;
        for (size_t k : {i, j}) {
          std::uniform_int_distribution<int64_t> other(0, knobs[k].cardinality() - 2);
          int64_t v = other(rng);
          e[k] = static_cast<int32_t>(v >= base[k] ? v + 1 : v);
        }
        consider(e, 2);
      }
    }
  }
  // On a plateau (the best measured tied): both radii ranked together, by how many ties lie
  // within two knob changes, then by the acquisition. The model has one label for the whole
  // plateau and cannot rank next to it; a configuration surrounded by it is the better bet.
  if (options_.incumbent_support && ties.size() > 1) {
    std::vector<Config> all = std::move(ring[0]);
    all.insert(all.end(), ring[1].begin(), ring[1].end());
    std::vector<int> support(all.size(), 0);
    for (size_t i = 0; i < all.size(); ++i) {
      const std::vector<int32_t>& a = all[i].entities();
      for (size_t t : ties) {
        support[i] += knob_changes(a, observed_[t].entities(), 2) <= 2;
      }
    }
    std::vector<size_t> idx(all.size());
    std::iota(idx.begin(), idx.end(), 0);
    const size_t picks = std::min<size_t>(count, all.size());
    const size_t keep = picks - random_picks(picks);  // ranked; the rest drawn at random
    if (keep > 0) {
      std::vector<float> s = predict(all);
      std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(), [&](size_t a, size_t b) {
        if (support[a] != support[b]) return support[a] > support[b];
        return s[a] != s[b] ? s[a] > s[b] : all[a].index() < all[b].index();
      });
    }
    draw_tail(idx, keep, picks - keep);
    std::vector<Config> out;
    for (size_t i = 0; i < picks; ++i) out.push_back(all[idx[i]]);
    return out;
  }
  if (ties.size() == 1) incumbent_ring_left_ = ring[0].size();  // a plateau is never certified
  // How many each radius gets: radius 1 first, radius 2 what is left; while the best stalls
  // (incumbent_widen), radius 2 at least half, as a trust region widens when it stops paying.
  size_t quota[2];
  quota[0] = std::min<size_t>(ring[0].size(), count);
  if (options_.incumbent_widen && stalled_ > 0) {
    quota[0] = std::min<size_t>(ring[0].size(), count - std::min<size_t>(ring[1].size(), count / 2));
  }
  quota[1] = std::min<size_t>(ring[1].size(), count - quota[0]);
  // incumbent_random: the ranked picks come first (radius 1, then 2); each radius's quota is
  // then filled with random draws among its candidates the ranked picks left.
  size_t ranked_left = quota[0] + quota[1] - random_picks(quota[0] + quota[1]);
  std::vector<Config> out;
  for (int radius = 0; radius < 2; ++radius) {
    std::vector<Config>& r = ring[radius];
    if (r.empty() || quota[radius] == 0) continue;
    std::vector<size_t> idx(r.size());
    std::iota(idx.begin(), idx.end(), 0);
    const size_t keep = std::min(quota[radius], ranked_left);
    ranked_left -= keep;
    if (keep > 0) {
      std::vector<float> s =
          options_.incumbent_by_mean && ensemble() ? exploit_score(r) : predict(r);
      const std::vector<char>& adj = adjacent[radius];
      const bool by_adjacency = options_.incumbent_adjacent;
      auto better = [&](size_t a, size_t b) {
        if (by_adjacency && adj[a] != adj[b]) return adj[a] > adj[b];
        return s[a] != s[b] ? s[a] > s[b] : r[a].index() < r[b].index();
      };
      if (options_.incumbent_stratify > 0) {
        std::sort(idx.begin(), idx.end(), better);
        idx = stratified_order(r, observed_[ties.front()], idx, options_.incumbent_stratify);
      } else {
        std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(), better);
      }
    }
    draw_tail(idx, keep, quota[radius] - keep);
    for (size_t i = 0; i < quota[radius]; ++i) out.push_back(r[idx[i]]);
  }
  return out;
}

size_t ModelPolicy::random_picks(size_t picks) const {
  const double share = std::clamp(options_.incumbent_random, 0.0, 1.0);
  if (share <= 0 || picks == 0) return 0;
  size_t n = static_cast<size_t>(std::lround(share * static_cast<double>(picks)));
  if (picks >= 2) n = std::max<size_t>(n, 1);
  return std::min(n, picks);
}

void ModelPolicy::draw_tail(std::vector<size_t>& idx, size_t from, size_t n) {
  if (n == 0) return;
  // The candidates not ranked, in their own order (partial_sort leaves them shuffled), then
  // the first n of them by a partial Fisher-Yates shuffle on the policy's generator.
  std::sort(idx.begin() + from, idx.end());
  for (size_t i = from; i < from + n && i + 1 < idx.size(); ++i) {
    std::uniform_int_distribution<size_t> pick(i, idx.size() - 1);
    std::swap(idx[i], idx[pick(rng_)]);
  }
}

std::vector<Config> ModelPolicy::untried_ring(const Config& centre,
                                              const std::unordered_set<uint64_t>& exclude) const {
  const auto& knobs = space_.knobs();
  std::vector<int32_t> e = centre.entities();
  std::vector<Config> ring;
  for (size_t k = 0; k < knobs.size(); ++k) {
    const int32_t base = e[k];
    for (int32_t a = 0; a < knobs[k].cardinality(); ++a) {
      if (a == base) continue;
      e[k] = a;
      Config c(&space_, e);
      if (!exclude.contains(c.index()) && space_.is_valid(c)) ring.push_back(std::move(c));
    }
    e[k] = base;
  }
  return ring;
}

std::vector<Config> ModelPolicy::restart_candidates(int count,
                                                    const std::unordered_set<uint64_t>& exclude) {
  // Members planned but never handed out (the round ended first) are dropped; those handed
  // out and not yet measured are on their way.
  std::erase_if(chain_, [&](uint64_t index) { return !visited_.contains(index); });
  // The chain's best measured member; unmeasured members are still on their way.
  const Config* centre = nullptr;
  double centre_t = -1;
  bool pending = false;
  for (uint64_t index : chain_) {
    auto row = row_of_.find(index);
    if (row == row_of_.end()) {
      pending = true;
      continue;
    }
    if (throughput_[row->second] > centre_t) {
      centre_t = throughput_[row->second];
      centre = &observed_[row->second];
    }
  }
  std::vector<Config> ring;
  if (centre != nullptr) ring = untried_ring(*centre, exclude);
  std::vector<Config> out;
  if (ring.empty()) {
    if (pending && centre == nullptr) return out;  // the start is being measured
    if (!pending) {
      // A new chain from a random valid unvisited configuration.
      chain_.clear();
      for (int tries = 0; tries < 64 && out.empty(); ++tries) {
        std::optional<Config> c = space_.sample_valid(rng_, 1000);
        if (c && !exclude.contains(c->index())) out.push_back(std::move(*c));
      }
    }
  } else {
    out = best_predicted(ring, count);
  }
  for (const Config& c : out) chain_.insert(c.index());
  return out;
}

std::vector<Config> ModelPolicy::basin_candidates(int count,
                                                  const std::unordered_set<uint64_t>& exclude) {
  // The measured configurations best first; the first that is no exact tie of the best, has
  // no better one within two knob changes and has an untried valid one-change neighbour is
  // the centre. O(n^2) comparisons at worst, each stopping at 3 differing knobs.
  if (count <= 0 || observed_.empty()) return {};
  const double best = *std::max_element(throughput_.begin(), throughput_.end());
  if (best <= 0) return {};
  const std::vector<size_t> order = records_best_first();
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t c = order[i];
    if (throughput_[c] <= 0) break;
    if (throughput_[c] >= tie_floor(best)) continue;  // the incumbent's own trust region
    bool local_best = true;
    for (size_t j = 0; j < i && local_best; ++j) {
      if (throughput_[order[j]] > throughput_[c] &&
          knob_changes(observed_[c].entities(), observed_[order[j]].entities(), 2) <= 2) {
        local_best = false;
      }
    }
    if (!local_best) continue;
    std::vector<Config> ring = untried_ring(observed_[c], exclude);
    if (!ring.empty()) return best_predicted(ring, count);
  }
  return {};
}

std::vector<Config> ModelPolicy::coverage_candidates(int count,
                                                     const std::unordered_set<uint64_t>& exclude) {
  if (count <= 0 || observed_.empty()) return {};
  const auto& knobs = space_.knobs();
  std::vector<std::vector<bool>> held(knobs.size());
  for (size_t k = 0; k < knobs.size(); ++k) held[k].assign(knobs[k].cardinality(), false);
  for (const Config& c : observed_) {
    for (size_t k = 0; k < knobs.size(); ++k) held[k][c.entities()[k]] = true;
  }
  size_t best = 0;
  for (size_t i = 1; i < observed_.size(); ++i) {
    if (throughput_[i] > throughput_[best]) best = i;
  }
  const std::vector<int32_t> base = observed_[best].entities();
  // For each value nobody holds: the incumbent with it, else with it and one more change.
  std::vector<Config> cands;
  std::unordered_set<uint64_t> seen;
  for (size_t k = 0; k < knobs.size(); ++k) {
    for (int32_t v = 0; v < knobs[k].cardinality(); ++v) {
      if (held[k][v]) continue;
      std::vector<int32_t> e = base;
      e[k] = v;
      std::vector<Config> options;
      auto consider = [&](const std::vector<int32_t>& x) {
        Config c(&space_, x);
        if (exclude.contains(c.index()) || seen.contains(c.index())) return;
        if (space_.is_valid(c)) options.push_back(std::move(c));
      };
      consider(e);
      if (options.empty()) {
        for (size_t j = 0; j < knobs.size(); ++j) {
          if (j == k) continue;
          for (int32_t b = 0; b < knobs[j].cardinality(); ++b) {
            if (b == base[j]) continue;
            e[j] = b;
            consider(e);
          }
          e[j] = base[j];
        }
      }
      if (options.empty()) continue;
      std::vector<float> s = predict(options);
      size_t pick = std::max_element(s.begin(), s.end()) - s.begin();
      seen.insert(options[pick].index());
      cands.push_back(std::move(options[pick]));
    }
  }
  if (cands.empty()) return {};
  std::vector<float> s = predict(cands);
  std::vector<size_t> idx(cands.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return s[a] != s[b] ? s[a] > s[b] : cands[a].index() < cands[b].index();
  });
  // Best first, skipping a candidate whose new values an earlier pick already brings.
  std::vector<Config> out;
  for (size_t i : idx) {
    if (static_cast<int>(out.size()) >= count) break;
    bool fresh = false;
    for (size_t k = 0; k < knobs.size(); ++k) fresh |= !held[k][cands[i].entities()[k]];
    if (!fresh) continue;
    for (size_t k = 0; k < knobs.size(); ++k) held[k][cands[i].entities()[k]] = true;
    out.push_back(cands[i]);
  }
  return out;
}

std::vector<Config> ModelPolicy::recombine_candidates(int count,
                                                      const std::unordered_set<uint64_t>& exclude) {
  if (count <= 0 || observed_.empty()) return {};
  const auto& knobs = space_.knobs();
  const size_t best =
      std::max_element(throughput_.begin(), throughput_.end()) - throughput_.begin();
  if (throughput_[best] <= 0) return {};
  // Parents: for every knob value, the best measured configuration holding it (failed ones
  // never), without repeats and without the incumbent.
  std::vector<size_t> slice_best;
  for (size_t k = 0; k < knobs.size(); ++k) {
    std::vector<long> top(knobs[k].cardinality(), -1);
    for (size_t i = 0; i < observed_.size(); ++i) {
      if (throughput_[i] <= 0) continue;
      long& t = top[observed_[i].entities()[k]];
      if (t < 0 || throughput_[i] > throughput_[t]) t = static_cast<long>(i);
    }
    for (long t : top) {
      if (t >= 0 && static_cast<size_t>(t) != best) slice_best.push_back(t);
    }
  }
  std::sort(slice_best.begin(), slice_best.end());
  slice_best.erase(std::unique(slice_best.begin(), slice_best.end()), slice_best.end());
  // Children: every mix of the knobs a parent differs from the incumbent in where they differ
  // in at most 8 (2^8 - 2 mixes), else 256 drawn uniformly; the parents themselves left out.
  constexpr size_t kAllUpTo = 8;
  constexpr uint64_t kDraws = 256;
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(fits_) + 1);
  const std::vector<int32_t>& base = observed_[best].entities();
  std::vector<Config> cands;
  std::unordered_set<uint64_t> seen;
  for (size_t p : slice_best) {
    const std::vector<int32_t>& other = observed_[p].entities();
    std::vector<size_t> diff;
    for (size_t k = 0; k < knobs.size(); ++k) {
      if (other[k] != base[k]) diff.push_back(k);
    }
    if (diff.size() < 2) continue;  // a one-knob neighbour: the trust region's
    const bool all = diff.size() <= kAllUpTo;
    const size_t bits = std::min<size_t>(diff.size(), 63);  // knobs past 63 stay the incumbent's
    const uint64_t masks = all ? (uint64_t{1} << bits) - 2 : kDraws;
    std::uniform_int_distribution<uint64_t> draw(1, (uint64_t{1} << bits) - 2);
    for (uint64_t m = 0; m < masks; ++m) {
      const uint64_t mask = all ? m + 1 : draw(rng);
      std::vector<int32_t> e = base;
      for (size_t d = 0; d < bits; ++d) {
        if ((mask >> d) & 1) e[diff[d]] = other[diff[d]];
      }
      Config c(&space_, e);
      if (exclude.contains(c.index()) || !seen.insert(c.index()).second) continue;
      if (space_.is_valid(c)) cands.push_back(std::move(c));
    }
  }
  return best_predicted(cands, count);
}

std::vector<Config> ModelPolicy::best_predicted(const std::vector<Config>& cands, int count) {
  if (cands.empty() || count <= 0) return {};
  std::vector<float> s = predict(cands);
  std::vector<size_t> idx(cands.size());
  std::iota(idx.begin(), idx.end(), 0);
  const size_t keep = std::min<size_t>(count, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(), [&](size_t a, size_t b) {
    return s[a] != s[b] ? s[a] > s[b] : cands[a].index() < cands[b].index();
  });
  std::vector<Config> out;
  for (size_t i = 0; i < keep; ++i) out.push_back(cands[idx[i]]);
  return out;
}

std::vector<Config> ModelPolicy::initial_design(int count) {
  // A Latin hypercube over entity positions, each point moved to the nearest (normalised L1
  // over entity positions) of a pool of random valid configurations. Its own stream, so that
  // the design depends only on the seed.
  std::mt19937_64 rng(seed_ * 0x94D049BB133111EBull + 0x1234567ull);
  const auto& knobs = space_.knobs();
  std::vector<std::vector<int32_t>> points(count, std::vector<int32_t>(knobs.size()));
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t k = 0; k < knobs.size(); ++k) {
    std::vector<int> strata(count);
    std::iota(strata.begin(), strata.end(), 0);
    std::shuffle(strata.begin(), strata.end(), rng);
    const int64_t card = knobs[k].cardinality();
    for (int i = 0; i < count; ++i) {
      double x = (strata[i] + u(rng)) / count;
      points[i][k] = static_cast<int32_t>(std::min<int64_t>(card - 1, int64_t(x * card)));
    }
  }
  std::vector<Config> pool;
  std::unordered_set<uint64_t> in_pool;
  const int want_pool = std::max(256, 16 * count);
  for (int tries = 0; tries < 4 * want_pool && static_cast<int>(pool.size()) < want_pool; ++tries) {
    std::optional<Config> c = space_.sample_valid(rng, 1000);
    if (!c) break;
    if (!visited_.contains(c->index()) && in_pool.insert(c->index()).second) {
      pool.push_back(std::move(*c));
    }
  }
  std::vector<Config> out;
  std::unordered_set<uint64_t> taken;
  if (options_.design == DesignKind::balanced) {
    // Stratified over the valid configurations instead of the box: each pick is the pool
    // member whose knob values the design holds least often relative to their frequency among
    // valid configurations (the pool's), first drawn first on ties. Like the hypercube it
    // spreads every knob's values, but it follows the valid set's shape instead of pushing
    // points onto the constraints' boundary.
    std::vector<std::vector<double>> freq(knobs.size());
    std::vector<std::vector<int>> held(knobs.size());
    for (size_t k = 0; k < knobs.size(); ++k) {
      freq[k].assign(knobs[k].cardinality(), 0.0);
      held[k].assign(knobs[k].cardinality(), 0);
    }
    for (const Config& c : pool) {
      for (size_t k = 0; k < knobs.size(); ++k) freq[k][c.entities()[k]] += 1.0 / pool.size();
    }
    std::vector<bool> used(pool.size(), false);
    for (int i = 0; i < count; ++i) {
      double best = 1e300;
      size_t pick = pool.size();
      for (size_t j = 0; j < pool.size(); ++j) {
        if (used[j]) continue;
        double cost = 0;
        for (size_t k = 0; k < knobs.size(); ++k) {
          int32_t v = pool[j].entities()[k];
          cost += held[k][v] / std::max(freq[k][v], 1.0 / pool.size());
        }
        if (cost < best) {
          best = cost;
          pick = j;
        }
      }
      if (pick == pool.size()) break;
      used[pick] = true;
      for (size_t k = 0; k < knobs.size(); ++k) ++held[k][pool[pick].entities()[k]];
      out.push_back(pool[pick]);
    }
    return out;
  }
  for (const auto& p : points) {
    Config target(&space_, p);
    if (space_.is_valid(target) && !visited_.contains(target.index()) &&
        taken.insert(target.index()).second) {
      out.push_back(std::move(target));
      continue;
    }
    double best = 1e300;
    const Config* pick = nullptr;
    for (const Config& c : pool) {
      if (taken.contains(c.index())) continue;
      double d = 0;
      for (size_t k = 0; k < knobs.size(); ++k) {
        const int64_t card = knobs[k].cardinality();
        if (card > 1) d += std::abs(c.entities()[k] - p[k]) / double(card - 1);
      }
      if (d < best) {
        best = d;
        pick = &c;
      }
    }
    if (!pick) break;
    taken.insert(pick->index());
    out.push_back(*pick);
  }
  return out;
}

std::vector<Config> ModelPolicy::random_slots(int size,
                                              const std::unordered_set<uint64_t>& exclude) {
  const int count = std::min(size / 2, options_.random_total - random_made_);
  std::vector<Config> out;
  std::unordered_set<uint64_t> taken = exclude;
  for (int i = 0; i < count; ++i) {
    std::optional<Config> c = draw_unvisited(space_, taken, rng_);
    if (!c) break;
    taken.insert(c->index());
    out.push_back(std::move(*c));
  }
  random_made_ += static_cast<int>(out.size());
  return out;
}

std::vector<Config> ModelPolicy::covering_start(int count) {
  // Drawn from the proposals' stream: with a pool of one the start is the plain random batch.
  const auto& knobs = space_.knobs();
  std::vector<Config> pool;
  std::unordered_set<uint64_t> in_pool;
  const int want_pool = 8 * count;
  for (int tries = 0; tries < 4 * want_pool && static_cast<int>(pool.size()) < want_pool; ++tries) {
    std::optional<Config> c = draw_unvisited(space_, visited_, rng_);
    if (!c) break;
    if (in_pool.insert(c->index()).second) pool.push_back(std::move(*c));
  }
  std::vector<std::vector<int>> held(knobs.size());
  for (size_t k = 0; k < knobs.size(); ++k) held[k].assign(knobs[k].cardinality(), 0);
  std::vector<bool> used(pool.size(), false);
  std::vector<Config> out;
  const int covering =
      static_cast<int>(std::lround(std::clamp(options_.cover_share, 0.0, 1.0) * count));
  for (int i = 0; i < covering; ++i) {
    // The pool member whose values the start holds least often: the sum over knobs of how
    // often each of its values is held already (0 for a start that holds none of them).
    long best = std::numeric_limits<long>::max();
    size_t pick = pool.size();
    for (size_t j = 0; j < pool.size(); ++j) {
      if (used[j]) continue;
      long cost = 0;
      for (size_t k = 0; k < knobs.size(); ++k) cost += held[k][pool[j].entities()[k]];
      if (cost < best) {
        best = cost;
        pick = j;
      }
    }
    if (pick == pool.size()) break;
    used[pick] = true;
    for (size_t k = 0; k < knobs.size(); ++k) ++held[k][pool[pick].entities()[k]];
    out.push_back(pool[pick]);
  }
  for (size_t j = 0; j < pool.size() && static_cast<int>(out.size()) < count; ++j) {
    if (!used[j]) out.push_back(pool[j]);
  }
  return out;
}

void ModelPolicy::fit_ensemble(const cost_model::FeatureMatrix& x, const std::vector<float>& labels,
                               const std::vector<float>& margin, bool warm) {
  if (!warm) members_.clear();
  member_row_.clear();
  member_z_.clear();
  const int n = x.rows;
  const int count = std::max(1, options_.ensemble);
  // Trees a member grows now: a split fit from scratch a share of them, each of the next
  // split_refit_parts - 1 refits a share of the rest (instead of its warm trees: the fit from
  // scratch spans that many rounds).
  int fit_trees = model_options_.rounds;
  int warm_grow = options_.warm_trees;
  if (warm && pending_trees_ > 0) {
    warm_grow = split_share(pending_trees_, pending_parts_);
    pending_trees_ -= warm_grow;
    --pending_parts_;
  } else {
    pending_trees_ = pending_parts_ = 0;
  }
  // Only where the next refits are sure to be warm ones: a round adds at most plan_size
  // records, under refit_growth times these.
  const int parts = std::max(2, options_.split_refit_parts);
  if (!warm && options_.split_refit_from > 0 && n >= options_.split_refit_from &&
      options_.warm_trees > 0 && options_.refit_growth * n > (parts - 1) * options_.plan_size) {
    fit_trees = split_share(model_options_.rounds, parts);
    pending_trees_ = model_options_.rounds - fit_trees;
    pending_parts_ = parts - 1;
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
    lists[k] = annealer_.find_best(score, round_size_ > 0 ? round_size_ : options_.plan_size,
                                   visited_, rng_);
  }
  std::vector<Config> out;
  std::unordered_set<uint64_t> taken;
  std::vector<size_t> next(m, 0);
  std::uniform_int_distribution<size_t> member(0, m - 1);
  while (static_cast<int>(out.size()) < (round_size_ > 0 ? round_size_ : options_.plan_size)) {
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
  const int size = round_size_ > 0 ? round_size_ : options_.plan_size;
  // The trust region's share: doubled for every plan at which the best has not improved.
  std::vector<Config> local;
  const double best =
      throughput_.empty() ? 0.0 : *std::max_element(throughput_.begin(), throughput_.end());
  if (best > best_at_plan_ * (1 + 1e-9)) {
    stalled_ = 0;
  } else {
    ++stalled_;
  }
  best_at_plan_ = std::max(best_at_plan_, best);
  if (best > basin_reference_ * (1 + std::max(1e-9, options_.basin_gain))) {
    basin_stalled_ = 0;
    basin_reference_ = best;
  } else {
    ++basin_stalled_;
  }
  incumbent_share_ = 0;
  if (trained() && options_.incumbent_share > 0) {
    double base = options_.incumbent_share;
    double most = std::max(options_.incumbent_max_share, base);
    if (options_.credit_top > 0) {
      const double pt = (credit_hits_[0] + 1) / (credit_picks_[0] + 2);
      const double pm = (credit_hits_[1] + 1) / (credit_picks_[1] + 2);
      base = std::min(std::max(options_.credit_max, options_.incumbent_share),
                      base * pt / (base * pt + (1 - base) * pm));
      most = std::max(most, base);
      for (int s = 0; s < 2; ++s) {
        credit_picks_[s] *= options_.credit_decay;
        credit_hits_[s] *= options_.credit_decay;
      }
    }
    incumbent_share_ = std::min(most, base * std::ldexp(1.0, std::min(stalled_, 30)));
    if (options_.plateau_share > 0) {
      int tied = 0;
      for (double t : throughput_) tied += t >= tie_floor(best);
      if (best > 0 && tied > 1) {
        incumbent_share_ = std::max(incumbent_share_, options_.plateau_share);
      }
    }
    int count = static_cast<int>(std::lround(incumbent_share_ * size));
    local = incumbent_candidates(std::max(count, 1), visited_);
    if (options_.restart_share > 0 && incumbent_ring_left_ == 0) {
      // A share of the slots climbs from the restart, the rest stays at radius 2.
      const int slots = std::max(count, 1);
      std::unordered_set<uint64_t> taken = visited_;
      const int climb = static_cast<int>(std::lround(options_.restart_share * slots));
      const int keep = slots - std::max(1, climb);
      if (static_cast<int>(local.size()) > keep) local.resize(std::max(keep, 0));
      for (const Config& c : local) taken.insert(c.index());
      for (Config& c : restart_candidates(slots - static_cast<int>(local.size()), taken)) {
        local.push_back(std::move(c));
      }
    }
  }
  if (trained() && options_.basin_share > 0 && basin_stalled_ >= options_.basin_stall &&
      !local.empty()) {
    // A share of the trust region's slots (at least one, and one stays with the incumbent)
    // goes to the second basin; a pick in both lists counts once.
    const int slots =
        std::max(1, static_cast<int>(std::lround(options_.basin_share * double(local.size()))));
    std::vector<Config> second = basin_candidates(slots, visited_);
    if (!second.empty()) {
      local.resize(local.size() - std::min(local.size() - 1, second.size()));
      std::unordered_set<uint64_t> in_local;
      for (const Config& c : local) in_local.insert(c.index());
      for (Config& c : second) {
        if (!in_local.contains(c.index())) local.push_back(std::move(c));
      }
    }
  }
  std::unordered_set<uint64_t> exclude = visited_;
  for (const Config& c : local) exclude.insert(c.index());
  if (trained() && options_.coverage_share > 0) {
    int count = static_cast<int>(std::lround(options_.coverage_share * size));
    for (Config& c : coverage_candidates(std::max(count, 1), exclude)) {
      exclude.insert(c.index());
      local.push_back(std::move(c));
    }
  }
  if (trained() && options_.recombine_share > 0 && stalled_ >= options_.recombine_stall) {
    int count = static_cast<int>(std::lround(options_.recombine_share * size));
    for (Config& c : recombine_candidates(std::max(count, 1), exclude)) {
      exclude.insert(c.index());
      local.push_back(std::move(c));
    }
  }
  if (trained() && options_.local_share > 0) {
    int count = static_cast<int>(std::lround(options_.local_share * size));
    for (Config& c : local_candidates(std::max(count, 1), exclude)) {
      exclude.insert(c.index());
      local.push_back(std::move(c));
    }
  }
  std::vector<Config> random;
  if (trained()) random = random_slots(size - static_cast<int>(local.size()), exclude);
  for (const Config& c : random) exclude.insert(c.index());
  const int rest = std::max(0, size - static_cast<int>(local.size() + random.size()));
  int want = options_.diversity ? rest * 3 : rest;
  ScoreFunction score = [this](const std::vector<Config>& cs) { return predict(cs); };
  std::vector<Config> found;
  survivors_.clear();
  if (cascade_ && cascade_->trained()) {
    ScoreFunction cheap = [this](const std::vector<Config>& cs) { return cascade_->score(cs); };
    survivors_ =
        annealer_.find_best(cheap, std::max(want, options_.cascade.survivors), exclude, rng_);
    found = rank_survivors(survivors_, predict(survivors_), want);
  } else {
    found = annealer_.find_best(score, want, exclude, rng_);
  }
  if (options_.credit_top > 0) {
    origin_.clear();  // proposed but never measured: no credit either way
    for (const Config& c : local) origin_[c.index()] = 0;
    for (const Config& c : found) origin_[c.index()] = 1;
  }
  // The local picks first: a batch smaller than the plan still gets them.
  plan_ = std::move(local);
  plan_.insert(plan_.end(), random.begin(), random.end());
  if (!options_.diversity) {
    plan_.insert(plan_.end(), found.begin(), found.end());
    return;
  }
  std::set<std::pair<int, int32_t>> covered;  // (knob, entity) pairs the plan holds
  std::vector<bool> taken(found.size(), false);
  const double knobs = static_cast<double>(space_.knobs().size());
  const size_t plan_end = plan_.size() + std::min<size_t>(rest, found.size());
  while (plan_.size() < plan_end) {
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
  if (batch <= 0) return {};
  // Before anything was measured (and without transfer): the space-filling design.
  if (observed_.empty() && !options_.transfer && options_.initial_design > 0) {
    if (design_.empty() && design_next_ == 0) design_ = initial_design(options_.initial_design);
    std::vector<Config> out;
    while (design_next_ < design_.size() && static_cast<int>(out.size()) < batch) {
      const Config& c = design_[design_next_++];
      if (visited_.insert(c.index()).second) out.push_back(c);
    }
    if (!out.empty()) return out;
  }
  // The covering start: the first batch spread over every knob's values.
  if (observed_.empty() && !options_.transfer && options_.cover_start &&
      options_.initial_design <= 0) {
    if (design_.empty() && design_next_ == 0) {
      design_ = covering_start(options_.first_batch > 0 ? options_.first_batch : batch);
    }
    std::vector<Config> out;
    while (design_next_ < design_.size() && static_cast<int>(out.size()) < batch) {
      const Config& c = design_[design_next_++];
      if (visited_.insert(c.index()).second) out.push_back(c);
    }
    if (!out.empty()) return out;
  }
  // A smaller random first batch: the first fit comes sooner.
  if (observed_.empty() && !options_.transfer && options_.first_batch > 0 &&
      visited_.size() < static_cast<size_t>(options_.first_batch)) {
    batch = std::min(batch, options_.first_batch - static_cast<int>(visited_.size()));
  }
  const int round = round_size_ > 0 ? round_size_ : options_.plan_size;
  bool stale = new_since_fit_ >= round || (plan_next_ >= plan_.size() && new_since_fit_ > 0);
  if (stale || (fits_ == 0 && plan_.empty() && options_.transfer)) refit_and_plan();
  // What is left of the round (results first, then the next fit); the whole batch when the
  // caller proposes again without observing.
  if (round_size_ > 0 && proposed_since_fit_ < round_size_) {
    batch = std::min(batch, round_size_ - proposed_since_fit_);
  }

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
    if (!c && options_.bound_bias > 0 && !trained() && !options_.transfer) {
      c = draw_toward_bounds(space_, visited_, rng_, options_.bound_bias);
    }
    if (!c) c = draw_unvisited(space_, visited_, rng_);
    if (!c) break;
    visited_.insert(c->index());
    out.push_back(std::move(*c));
  }
  proposed_since_fit_ += static_cast<int>(out.size());
  if (!trained() && !options_.transfer) random_made_ += static_cast<int>(out.size());
  return out;
}

std::unique_ptr<SearchPolicy> make_model_policy(const ConfigSpace& space,
                                                const cost_model::FeatureExtractor& features,
                                                ModelPolicyOptions options) {
  return std::make_unique<ModelPolicy>(space, features, std::move(options));
}

}  // namespace cutune
