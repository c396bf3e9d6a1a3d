#include "src/tune/search_policy.h"

#include <stdexcept>
#include <string>

namespace cutune {

std::string_view to_string(TunerKind kind) {
  switch (kind) {
    case TunerKind::xgb:
      return "xgb";
    case TunerKind::genetic:
      return "ga";
    case TunerKind::random:
      return "random";
    case TunerKind::grid:
      return "grid";
  }
  return "?";
}

TunerKind parse_tuner_kind(std::string_view name) {
  for (TunerKind k : {TunerKind::xgb, TunerKind::genetic, TunerKind::random, TunerKind::grid}) {
    if (name == to_string(k)) return k;
  }
  throw std::invalid_argument("unknown tuner '" + std::string(name) +
                              "' (expected xgb, ga, random or grid)");
}

double throughput_of(const MeasureResult& result) {
  if (!result.ok() || result.times_s.empty()) return 0.0;
  double t = result.mean_s();
  return t > 0 ? 1.0 / t : 0.0;
}

std::optional<Config> draw_unvisited(const ConfigSpace& space,
                                     const std::unordered_set<uint64_t>& visited,
                                     std::mt19937_64& rng) {
  constexpr int kRejections = 256;
  for (int i = 0; i < kRejections; ++i) {
    std::optional<Config> c = space.sample_valid(rng, 10000);
    if (!c) break;
    if (!visited.contains(c->index())) return c;
  }
  // Nearly exhausted (or very sparse): pick uniformly among what is left, by enumeration.
  constexpr uint64_t kEnumerationLimit = uint64_t{1} << 24;
  if (space.size() > kEnumerationLimit) return std::nullopt;
  std::vector<uint64_t> left;
  for (uint64_t i = 0; i < space.size(); ++i) {
    if (visited.contains(i)) continue;
    if (space.is_valid(space.get(i))) left.push_back(i);
  }
  if (left.empty()) return std::nullopt;
  std::uniform_int_distribution<size_t> pick(0, left.size() - 1);
  return space.get(left[pick(rng)]);
}

namespace {

class RandomPolicy : public SearchPolicy {
 public:
  explicit RandomPolicy(const ConfigSpace& space) : space_(space) {}

  void reset(uint64_t seed) override {
    rng_.seed(seed);
    visited_.clear();
  }

  std::vector<Config> propose(int batch) override {
    std::vector<Config> out;
    while (static_cast<int>(out.size()) < batch) {
      std::optional<Config> c = draw_unvisited(space_, visited_, rng_);
      if (!c) break;
      visited_.insert(c->index());
      out.push_back(*c);
    }
    return out;
  }

  void observe(const std::vector<Config>& configs, const std::vector<MeasureResult>&) override {
    for (const Config& c : configs) visited_.insert(c.index());
  }

  std::string name() const override { return "random"; }

 private:
  const ConfigSpace& space_;
  std::mt19937_64 rng_;
  std::unordered_set<uint64_t> visited_;
};

class GridPolicy : public SearchPolicy {
 public:
  explicit GridPolicy(const ConfigSpace& space) : space_(space) {}

  void reset(uint64_t) override {
    next_ = 0;
    visited_.clear();
  }

  std::vector<Config> propose(int batch) override {
    std::vector<Config> out;
    while (static_cast<int>(out.size()) < batch && next_ < space_.size()) {
      uint64_t i = next_++;
      if (visited_.contains(i)) continue;
      Config c = space_.get(i);
      if (!space_.is_valid(c)) continue;
      visited_.insert(i);
      out.push_back(std::move(c));
    }
    return out;
  }

  void observe(const std::vector<Config>& configs, const std::vector<MeasureResult>&) override {
    for (const Config& c : configs) visited_.insert(c.index());
  }

  std::string name() const override { return "grid"; }

 private:
  const ConfigSpace& space_;
  uint64_t next_ = 0;
  std::unordered_set<uint64_t> visited_;
};

}  // namespace

std::unique_ptr<SearchPolicy> make_random_policy(const ConfigSpace& space) {
  auto p = std::make_unique<RandomPolicy>(space);
  p->reset(0);
  return p;
}

std::unique_ptr<SearchPolicy> make_grid_policy(const ConfigSpace& space) {
  auto p = std::make_unique<GridPolicy>(space);
  p->reset(0);
  return p;
}

}  // namespace cutune
