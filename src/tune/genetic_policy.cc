// Genetic search after AutoTVM's GATuner (Chen et al., "Learning to Optimize Tensor Programs",
// NeurIPS 2018; tvm/python/tvm/autotvm/tuner/ga_tuner.py): fitness-proportional parents,
// single-point crossover of the knob vector, per-knob mutation, elites carried over.

#include <algorithm>
#include <map>

#include "src/tune/search_policy.h"

namespace cutune {

namespace {

class GeneticPolicy : public SearchPolicy {
 public:
  GeneticPolicy(const ConfigSpace& space, GeneticOptions options)
      : space_(space), options_(options) {}

  void reset(uint64_t seed) override {
    rng_.seed(seed);
    visited_.clear();
    fitness_.clear();
    pending_.clear();
  }

  std::vector<Config> propose(int batch) override {
    std::vector<Config> out;
    while (static_cast<int>(out.size()) < batch) {
      if (pending_.empty()) breed();
      if (pending_.empty()) break;
      Config c = std::move(pending_.back());
      pending_.pop_back();
      if (visited_.contains(c.index())) continue;  // observed since it was bred
      visited_.insert(c.index());
      out.push_back(std::move(c));
    }
    return out;
  }

  void observe(const std::vector<Config>& configs,
               const std::vector<MeasureResult>& results) override {
    for (size_t i = 0; i < configs.size(); ++i) {
      visited_.insert(configs[i].index());
      fitness_[configs[i].index()] = throughput_of(results[i]);
    }
  }

  std::string name() const override { return "ga"; }

 private:
  // The next generation: children of the fittest `population` configurations seen so far
  // (elitist: a good configuration stays a parent until better ones displace it). Before any
  // fitness is known, or when breeding keeps producing visited children, random ones.
  void breed() {
    std::vector<std::pair<double, uint64_t>> ranked;
    for (auto [index, fit] : fitness_) ranked.emplace_back(fit, index);
    std::sort(ranked.begin(), ranked.end(), std::greater<>());
    if (static_cast<int>(ranked.size()) > options_.population) ranked.resize(options_.population);

    std::vector<std::vector<int32_t>> parents;
    std::vector<double> weights;
    for (auto [fit, index] : ranked) {
      parents.push_back(space_.get(index).entities());
      weights.push_back(fit);
    }
    double total = 0;
    for (double w : weights) total += w;

    std::unordered_set<uint64_t> bred;
    const auto& knobs = space_.knobs();
    const int want = options_.population;
    int attempts = 0;
    while (static_cast<int>(pending_.size()) < want && attempts < want * 20 && total > 0) {
      ++attempts;
      std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
      const auto& a = parents[pick(rng_)];
      const auto& b = parents[pick(rng_)];
      std::vector<int32_t> child = a;
      std::uniform_int_distribution<size_t> point(0, child.size());
      for (size_t k = point(rng_); k < child.size(); ++k) child[k] = b[k];
      std::uniform_real_distribution<double> u(0, 1);
      for (size_t k = 0; k < child.size(); ++k) {
        int64_t card = knobs[k].cardinality();
        if (card > 1 && u(rng_) < options_.mutation_probability) {
          child[k] =
              static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, card - 1)(rng_));
        }
      }
      Config c(&space_, std::move(child));
      uint64_t index = c.index();
      if (visited_.contains(index) || bred.contains(index) || !space_.is_valid(c)) continue;
      bred.insert(index);
      pending_.push_back(std::move(c));
    }
    std::unordered_set<uint64_t> taken = visited_;
    taken.insert(bred.begin(), bred.end());
    while (static_cast<int>(pending_.size()) < want) {
      std::optional<Config> c = draw_unvisited(space_, taken, rng_);
      if (!c) break;
      taken.insert(c->index());
      pending_.push_back(std::move(*c));
    }
    // propose() pops from the back; keep the bred order.
    std::reverse(pending_.begin(), pending_.end());
  }

  const ConfigSpace& space_;
  GeneticOptions options_;
  std::mt19937_64 rng_;
  std::unordered_set<uint64_t> visited_;
  std::map<uint64_t, double> fitness_;  // ordered, so breeding is deterministic
  std::vector<Config> pending_;
};

}  // namespace

std::unique_ptr<SearchPolicy> make_genetic_policy(const ConfigSpace& space,
                                                  GeneticOptions options) {
  auto p = std::make_unique<GeneticPolicy>(space, options);
  p->reset(0);
  return p;
}

}  // namespace cutune
