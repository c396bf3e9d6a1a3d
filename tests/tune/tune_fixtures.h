#pragma once
// Shared pieces of the tuning tests: a synthetic replay cache with a smooth surface and some
// failing entries, a knob-value feature extractor independent of cost_model's, and a
// measurer that takes a little time per batch (for the kill test).

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cost_model/features.h"
#include "src/replay/kt_cache.h"
#include "src/replay/replay_space.h"
#include "src/measure/measurer.h"
#include "src/records/record.h"
#include "src/tune/model/model_policy.h"
#include "tests/dataset_skip.h"

namespace cutune::test {

// The task key of the tuner tests' synthetic replays.
inline TaskKey synthetic_key() {
  TaskKey k;
  k.op = "synthetic";
  k.shape = {512};
  k.target_arch = "replay";
  k.device_name = "Synthetic GPU";
  k.template_name = "synthetic";
  return k;
}

// A model tuner small enough for a test: rounds of 32, 30 trees, 32 chains of 100 steps.
inline ModelPolicyOptions small_model() {
  ModelPolicyOptions o;
  o.plan_size = 32;
  o.model.rounds = 30;
  o.annealing.chains = 32;
  o.annealing.max_steps = 100;
  return o;
}

inline const std::string kDatasets = CUTUNE_SOURCE_DIR "/../shared/datasets";

// A smooth synthetic time of a template configuration, for fitting (no GPU).
inline MeasureResult synthetic_result(const Config& c) {
  MeasureResult r;
  double t = 1.0;
  for (size_t k = 0; k < c.entities().size(); ++k) {
    double v = std::log2(1.0 + double(c.get(static_cast<int>(k)))) - 1.0 - double(k % 3);
    t += 0.1 * v * v;
  }
  r.status = MeasureStatus::ok;
  r.timer = TimerKind::replay;
  r.times_s = {t * 1e-3};
  return r;
}

// The knobs in which two configurations differ.
inline int knob_changes(const Config& a, const Config& b) {
  int d = 0;
  for (size_t k = 0; k < a.entities().size(); ++k) d += a.entities()[k] != b.entities()[k];
  return d;
}

// The configurations' indices, in order.
inline std::vector<uint64_t> indices(const std::vector<Config>& cs) {
  std::vector<uint64_t> out;
  for (const Config& c : cs) out.push_back(c.index());
  return out;
}

// A result that took `seconds`.
inline MeasureResult timed(double seconds) {
  MeasureResult r;
  r.status = MeasureStatus::ok;
  r.times_s = {seconds};
  return r;
}

// `count` distinct valid configurations of `space`, drawn with `seed`.
inline std::vector<Config> distinct_valid(const ConfigSpace& space, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Config> out;
  std::unordered_set<uint64_t> seen;
  while (static_cast<int>(out.size()) < count) {
    std::optional<Config> c = space.sample_valid(rng);
    REQUIRE(c);
    if (seen.insert(c->index()).second) out.push_back(*c);
  }
  return out;
}

// Skips the test case (exit 77) when the dataset is absent; see tests/dataset_skip.h.
inline void require_dataset(const std::string& relative) {
  require_dataset_path(kDatasets + "/" + relative);
}

// 8 x 8 x 8 = 512 points, of which those with x * y > 1024 are absent (invalid in the space);
// time has one optimum at (x=16, y=4, z=5); one in eleven present entries fails at run time.
inline replay::KtCache synthetic_cache() {
  const std::vector<int64_t> xs = {1, 2, 4, 8, 16, 32, 64, 128};
  nlohmann::ordered_json j;  // the cache reader wants its keys in file order
  j["device_name"] = "Synthetic GPU";
  j["kernel_name"] = "synthetic";
  j["problem_size"] = {512};
  j["tune_params_keys"] = {"x", "y", "z"};
  j["tune_params"] = {{"x", xs}, {"y", xs}, {"z", {0, 1, 2, 3, 4, 5, 6, 7}}};
  int n = 0;
  for (int64_t x : xs) {
    for (int64_t y : xs) {
      for (int z = 0; z < 8; ++z) {
        if (x * y > 1024) continue;
        nlohmann::ordered_json e = {{"x", x}, {"y", y}, {"z", z}};
        if (++n % 11 == 0) {
          e["time"] = "RuntimeFailedConfig";
        } else {
          double lx = std::log2(double(x)) - 4, ly = std::log2(double(y)) - 2, lz = z - 5;
          double t = 1.0 + 0.3 * lx * lx + 0.2 * ly * ly + 0.05 * lz * lz + 0.1 * lx * ly;
          e["time"] = t;
          e["times"] = {t * 0.97, t * 1.03};
        }
        j["cache"][fmt::format("{},{},{}", x, y, z)] = e;
      }
    }
  }
  return replay::parse_kt_cache(j.dump(), "synthetic");
}

// Each knob's value (log2 where positive), as the knob features do, without depending on them.
class ValueFeatures : public cost_model::FeatureExtractor {
 public:
  explicit ValueFeatures(const ConfigSpace& space) : space_(space) {}
  std::string schema() const override { return "test-values/1"; }
  int size() const override { return static_cast<int>(space_.knobs().size()); }
  void extract(const Config& config, std::span<float> out) const override {
    for (int k = 0; k < size(); ++k) {
      double v = double(config.get(k));
      out[k] = static_cast<float>(v > 0 ? std::log2(v) : v);
    }
  }

 private:
  const ConfigSpace& space_;
};

// Forwards to another measurer after a pause, so that a run can be killed mid-way.
class SlowMeasurer : public Measurer {
 public:
  SlowMeasurer(Measurer& inner, std::chrono::milliseconds pause) : inner_(inner), pause_(pause) {}
  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    std::this_thread::sleep_for(pause_);
    return inner_.measure(batch);
  }
  std::string device_name() const override { return inner_.device_name(); }
  std::string target_arch() const override { return inner_.target_arch(); }

 private:
  Measurer& inner_;
  std::chrono::milliseconds pause_;
};

}  // namespace cutune::test
