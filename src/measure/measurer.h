#pragma once
// A measurer answers a batch of configurations with one result each, in order. Behind it:
// replayed measurements (a cache of real timings), the GPU (compile, run, time, check), or the
// CPU emulator (correctness only). A configuration that fails in any way is a result with its
// status, never an exception.

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/records/measure_result.h"
#include "src/space/config_space.h"

namespace cutune {

// Hands over one result as soon as it is known: `index` is the configuration's position in
// the batch. Calls come in any order, from any thread, but never two at once.
using ResultSink = std::function<void(size_t index, const MeasureResult& result)>;

class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual std::vector<MeasureResult> measure(const std::vector<Config>& batch) = 0;
  virtual std::string device_name() const = 0;
  virtual std::string target_arch() const = 0;

  // measure(), with every result also handed to `on_result` as it arrives, so that a caller
  // can log it before the batch ends (a killed run then loses only what was in flight). The
  // default hands them over, in order, when measure() returns.
  virtual std::vector<MeasureResult> measure_streaming(const std::vector<Config>& batch,
                                                       const ResultSink& on_result);

  // A hint that `next` will be measured after the batch about to be measured: a measurer that
  // compiles (the GPU's) starts compiling it in the background, so that NVRTC works on batch
  // b+1 while batch b runs. Returns at once; never changes any result. May be called from
  // another thread while measure_streaming runs (the tuner's background proposal hands over
  // b+1 as soon as it is chosen), never twice at once. Default: nothing.
  virtual void prefetch(const std::vector<Config>& /*next*/) {}

  // Measures `configs` again `rounds` times, interleaved (all of them, then all of them again,
  // so that clock and thermal drift touch each alike), and returns one result per
  // configuration with every round's times; a configuration that fails in any round keeps
  // that failure. details.rounds.remeasure_rounds says how many rounds its times come from.
  virtual std::vector<MeasureResult> remeasure(const std::vector<Config>& configs, int rounds);

  // The task's library baseline (cuBLAS, cuDNN) and `configs`, measured in turn `rounds`
  // times (baseline, configs, baseline, configs, ...: measure_interleaved in gpu_measurer.h)
  // with one worker's harness, timer and L2 flush, so that their ratios are fair: results[0]
  // is the baseline's, results[1 + i] configs[i]'s. Only the GPU measurer has a baseline; the
  // default throws std::logic_error.
  virtual std::vector<MeasureResult> versus_baseline(const std::vector<Config>& configs,
                                                     int rounds);
};

// The defaults, here so that every library with a measurer (src/tune links no measuring
// stage) has them.
inline std::vector<MeasureResult> Measurer::measure_streaming(const std::vector<Config>& batch,
                                                              const ResultSink& on_result) {
  std::vector<MeasureResult> results = measure(batch);
  if (on_result)
    for (size_t i = 0; i < results.size() && i < batch.size(); ++i) on_result(i, results[i]);
  return results;
}

inline std::vector<MeasureResult> Measurer::remeasure(const std::vector<Config>& configs,
                                                      int rounds) {
  std::vector<MeasureResult> merged(configs.size());
  std::vector<int> rounds_ok(configs.size(), 0);
  for (int round = 0; round < rounds; ++round) {
    std::vector<MeasureResult> results = measure(configs);
    for (size_t i = 0; i < configs.size() && i < results.size(); ++i) {
      MeasureResult& m = merged[i];
      MeasureResult& r = results[i];
      if (round > 0 && !m.ok()) continue;  // an earlier round failed: that failure stands
      if (round == 0 || !r.ok()) {
        std::vector<double> earlier = std::move(m.times_s);
        m = std::move(r);
        if (!m.ok()) continue;
        m.times_s.insert(m.times_s.begin(), earlier.begin(), earlier.end());
      } else {
        m.times_s.insert(m.times_s.end(), r.times_s.begin(), r.times_s.end());
        m.compile_s += r.compile_s;
        if (r.max_rel_error > m.max_rel_error) m.max_rel_error = r.max_rel_error;
      }
      ++rounds_ok[i];
    }
  }
  for (size_t i = 0; i < merged.size(); ++i) {
    merged[i].details.rounds.remeasure_rounds = rounds_ok[i];
  }
  return merged;
}

inline std::vector<MeasureResult> Measurer::versus_baseline(const std::vector<Config>&, int) {
  throw std::logic_error("this measurer times no library baseline");
}

}  // namespace cutune
