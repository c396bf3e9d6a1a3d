#include "src/tune/model/model_policy.h"

#include <algorithm>

#include "src/tune/model/start_design.h"

namespace cutune {

namespace {

// The annealing's options: with a cascade, at most cascade.chains chains.
AnnealingOptions resolve_annealing(const ModelPolicyOptions& o, std::string_view schema) {
  AnnealingOptions a = o.annealing;
  if (cascade_on(o, schema) && o.cascade.chains > 0) {
    a.chains = std::min(a.chains, o.cascade.chains);
  }
  return a;
}

const ModelPolicyOptions& validated(const ModelPolicyOptions& o) {
  o.validate();
  return o;
}

}  // namespace

ModelPolicy::ModelPolicy(const ConfigSpace& space, const cost_model::FeatureExtractor& features,
                         ModelPolicyOptions options)
    : space_(space),
      options_(validated(options)),
      surrogate_(space, features, options_),
      trust_(space, options_.trust, options_.basin),
      annealer_(space, resolve_annealing(options_, features.schema())) {
  reset(0);
}

void ModelPolicy::reset(uint64_t seed) {
  rng_.seed(seed);
  seed_ = seed;
  annealer_.reset();
  surrogate_.reset(seed);
  state_ = SearchState();
  plan_.clear();
  plan_next_ = 0;
  round_size_ = 0;
  min_round_ = 0;
  new_since_fit_ = 0;
  proposed_since_fit_ = 0;
  trust_share_ = 0;
  survivors_.clear();
  round_times_ = {};
}

void ModelPolicy::observe(const std::vector<Config>& configs,
                          const std::vector<MeasureResult>& results) {
  for (size_t i = 0; i < configs.size(); ++i) state_.record(configs[i], throughput_of(results[i]));
  new_since_fit_ += static_cast<int>(configs.size());
}

void ModelPolicy::refit_and_plan() {
  new_since_fit_ = 0;
  proposed_since_fit_ = 0;
  const int n = static_cast<int>(state_.size());
  int least = std::max(options_.min_batch, min_round_);
  // Before any record, a margin source's plan is the first batch (first_batch, as a random
  // start would be without one).
  if (n == 0 && options_.margin()) least = std::max(least, options_.first_batch);
  round_size_ = std::clamp(static_cast<int>(options_.round_fraction * n),
                           std::min(least, options_.plan_size), options_.plan_size);
  round_times_ = {};
  surrogate_.refit(state_.records(), state_.throughput(), round_times_);
  const double start = thread_cpu_seconds();
  plan();
  round_times_.plan = thread_cpu_seconds() - start;
}

void ModelPolicy::plan() {
  plan_.clear();
  plan_next_ = 0;
  trust_share_ = 0;
  survivors_.clear();
  if (!surrogate_.ranks()) return;
  const int size = round_size_ > 0 ? round_size_ : options_.plan_size;
  state_.trust.update(state_.best(), 0);
  state_.basin.update(state_.best(), options_.basin.gain);
  const ScoreFunction score = [this](const std::vector<Config>& cs) {
    return surrogate_.acquisition(cs);
  };
  std::vector<Config> local;
  if (surrogate_.trained()) {
    const uint64_t stream = seed_ * 0xBF58476D1CE4E5B9ull + static_cast<uint64_t>(fits());
    local = trust_.plan(state_, size, score, stream);
    trust_share_ = trust_.share();
  }
  std::unordered_set<uint64_t> exclude = state_.visited();
  for (const Config& c : local) exclude.insert(c.index());
  const int rest = std::max(0, size - static_cast<int>(local.size()));
  std::vector<Config> found;
  if (KnobSurrogate* cheap = surrogate_.cascade()) {
    const ScoreFunction cheap_score = [cheap](const std::vector<Config>& cs) {
      return cheap->score(cs);
    };
    survivors_ =
        annealer_.find_best(cheap_score, std::max(rest, surrogate_.survivors()), exclude, rng_);
    found = rank_survivors(survivors_, score(survivors_), rest);
  } else if (!surrogate_.trained()) {
    // Ranked by the margin source alone: the best of four times as many, spread out.
    found = spread_best(annealer_.find_best(score, 4 * rest, exclude, rng_), rest, 3);
  } else {
    found = annealer_.find_best(score, rest, exclude, rng_);
  }
  // The trust region's picks first: a batch smaller than the plan still gets them.
  plan_ = std::move(local);
  plan_.insert(plan_.end(), found.begin(), found.end());
}

std::vector<Config> ModelPolicy::propose(int batch) {
  if (batch <= 0) return {};
  const bool start = state_.empty() && !options_.margin();
  // A small random first batch: the first fit comes sooner.
  const auto visited = static_cast<int>(state_.visited().size());
  if (start && options_.first_batch > 0 && visited < options_.first_batch) {
    batch = std::min(batch, options_.first_batch - visited);
  }
  const int round = round_size_ > 0 ? round_size_ : options_.plan_size;
  const bool stale = new_since_fit_ >= round || (plan_next_ >= plan_.size() && new_since_fit_ > 0);
  if (stale || (fits() == 0 && plan_.empty() && options_.margin())) refit_and_plan();
  // What is left of the round (results first, then the next fit); the whole batch when the
  // caller proposes again without observing.
  if (round_size_ > 0 && proposed_since_fit_ < round_size_) {
    batch = std::min(batch, round_size_ - proposed_since_fit_);
  }
  std::vector<Config> out;
  std::uniform_real_distribution<double> u(0, 1);
  const bool toward_bounds =
      options_.bound_bias > 0 && !surrogate_.trained() && !options_.margin();
  while (static_cast<int>(out.size()) < batch) {
    const bool explore = plan_next_ >= plan_.size() || u(rng_) < options_.epsilon;
    std::optional<Config> c;
    if (!explore) {
      while (plan_next_ < plan_.size() && state_.visited(plan_[plan_next_].index())) ++plan_next_;
      if (plan_next_ < plan_.size()) c = plan_[plan_next_++];
    }
    if (!c && toward_bounds)
      c = draw_toward_bounds(space_, state_.visited(), rng_, options_.bound_bias);
    if (!c) c = draw_unvisited(space_, state_.visited(), rng_);
    if (!c) break;
    state_.visit(c->index());
    out.push_back(std::move(*c));
  }
  proposed_since_fit_ += static_cast<int>(out.size());
  return out;
}

std::unique_ptr<SearchPolicy> make_model_policy(const ConfigSpace& space,
                                                const cost_model::FeatureExtractor& features,
                                                ModelPolicyOptions options) {
  return std::make_unique<ModelPolicy>(space, features, std::move(options));
}

}  // namespace cutune
