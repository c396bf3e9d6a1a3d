#include "src/tune/replay_measurer_adapter.h"

#include <chrono>
#include <thread>

namespace cutune {

MeasureResult to_measure_result(const replay::ReplayMeasurement& measurement) {
  MeasureResult r;
  if (!measurement.valid) {
    r.status = MeasureStatus::invalid;
    r.error = measurement.error.empty() ? "invalid" : measurement.error;
    return r;
  }
  r.status = MeasureStatus::ok;
  r.timer = TimerKind::replay;
  // One value, the replayed answer itself, so that mean and median both equal what the cache
  // calls this configuration's time.
  r.times_s = {measurement.time_ms * 1e-3};
  r.compile_s = measurement.compile_ms * 1e-3;
  return r;
}

TaskKey replay_task_key(const replay::ReplayTask& task) {
  TaskKey key;
  key.op = task.cache().kernel_name;
  key.shape = task.cache().problem_size;
  key.target_arch = "replay";
  key.device_name = task.cache().device_name;
  key.template_name = task.cache().kernel_name;
  return key;
}

std::vector<Record> cache_records(const replay::ReplayTask& task) {
  const ConfigSpace& space = task.space();
  replay::ReplayMeasurer measurer(task);
  TaskKey key = replay_task_key(task);
  std::vector<Record> out;
  for (uint64_t i = 0; i < space.size(); ++i) {
    if (task.find(i) == nullptr) continue;
    Config c = space.get(i);
    Record r;
    r.task = key;
    r.config_index = i;
    r.knobs = c.to_json()["knobs"];
    r.result = to_measure_result(measurer.measure(c));
    out.push_back(std::move(r));
  }
  return out;
}

ReplayMeasurerAdapter::ReplayMeasurerAdapter(const replay::ReplayTask& task, bool noise,
                                             uint64_t seed, double cost_ms)
    : task_(task), measurer_(task, noise, seed), cost_ms_(cost_ms) {}

std::vector<MeasureResult> ReplayMeasurerAdapter::measure(const std::vector<Config>& batch) {
  return measure_streaming(batch, {});
}

std::vector<MeasureResult> ReplayMeasurerAdapter::measure_streaming(const std::vector<Config>& batch,
                                                                    const ResultSink& on_result) {
  std::vector<MeasureResult> out;
  out.reserve(batch.size());
  for (const Config& c : batch) {
    if (cost_ms_ > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(cost_ms_));
    out.push_back(to_measure_result(measurer_.measure(c)));
    if (on_result) on_result(out.size() - 1, out.back());
  }
  return out;
}

std::string ReplayMeasurerAdapter::device_name() const { return task_.cache().device_name; }

}  // namespace cutune
