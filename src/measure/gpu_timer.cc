#include "src/measure/gpu_timer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "src/runtime/cuda_check.h"
#include "src/measure/cupti_timer.h"
#include "src/runtime/driver_api.h"

namespace cutune {

MedianCi median_ci(std::vector<double> samples) {
  MedianCi ci;
  const size_t n = samples.size();
  if (n == 0) {
    ci.rel_half_width = std::numeric_limits<double>::infinity();
    return ci;
  }
  std::sort(samples.begin(), samples.end());
  ci.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  const double half = 1.96 * std::sqrt(double(n)) / 2.0;
  const auto lo_rank = static_cast<long>(std::floor(double(n) / 2.0 - half));
  const auto hi_rank = static_cast<long>(std::ceil(double(n) / 2.0 + half));
  ci.lo = samples[static_cast<size_t>(std::clamp<long>(lo_rank, 0, long(n) - 1))];
  ci.hi = samples[static_cast<size_t>(std::clamp<long>(hi_rank, 0, long(n) - 1))];
  ci.rel_half_width = (n < 3 || ci.median <= 0) ? std::numeric_limits<double>::infinity()
                                                : (ci.hi - ci.lo) / 2.0 / ci.median;
  return ci;
}

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::none:
      return "none";
    case StopReason::stable:
      return "stable";
    case StopReason::max_repeats:
      return "max_repeats";
    case StopReason::max_time:
      return "max_time";
    case StopReason::early_stop:
      return "early_stop";
  }
  return "none";
}

StopReason should_stop(const std::vector<double>& times, double elapsed_s, const TimingOptions& o,
                       double best_so_far_s) {
  const int n = static_cast<int>(times.size());
  if (n >= std::max(o.min_repeats, 1)) {
    const MedianCi ci = median_ci(times);
    if (std::isfinite(best_so_far_s) && o.early_stop_factor > 0 &&
        ci.median > o.early_stop_factor * best_so_far_s)
      return StopReason::early_stop;
    const double total = std::accumulate(times.begin(), times.end(), 0.0);
    if (total >= o.min_seconds && ci.rel_half_width < o.target_rel_ci) return StopReason::stable;
  }
  if (n >= o.max_repeats) return StopReason::max_repeats;
  if (elapsed_s >= o.max_seconds) return StopReason::max_time;
  return StopReason::none;
}

namespace {

class Event {
 public:
  Event() { CUTUNE_CU_CHECK(require_driver().cuEventCreate(&event_, CU_EVENT_DEFAULT)); }
  ~Event() {
    if (event_ != nullptr) driver_api()->cuEventDestroy_v2(event_);
  }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event& operator=(Event&&) = delete;
  CUevent get() const { return event_; }

 private:
  CUevent event_ = nullptr;
};

class EventTimer final : public KernelTimer {
 public:
  TimerKind kind() const override { return TimerKind::cuda_event; }

  std::vector<double> time(const std::function<void()>& before_each,
                           const std::function<void()>& launch, int repeats,
                           int /*kernels_per_run*/) override {
    const DriverApi& api = require_driver();
    std::vector<Event> starts(repeats), stops(repeats);
    for (int r = 0; r < repeats; ++r) {
      before_each();
      CUTUNE_CU_CHECK(api.cuEventRecord(starts[r].get(), nullptr));
      launch();
      CUTUNE_CU_CHECK(api.cuEventRecord(stops[r].get(), nullptr));
    }
    CUTUNE_CU_CHECK(api.cuCtxSynchronize());
    std::vector<double> times(repeats);
    for (int r = 0; r < repeats; ++r) {
      float ms = 0;
      CUTUNE_CU_CHECK(api.cuEventElapsedTime(&ms, starts[r].get(), stops[r].get()));
      times[r] = double(ms) * 1e-3;
    }
    return times;
  }
};

}  // namespace

std::unique_ptr<KernelTimer> make_event_timer() { return std::make_unique<EventTimer>(); }

std::unique_ptr<KernelTimer> make_kernel_timer(bool prefer_cupti, std::string* why_not_cupti) {
  if (prefer_cupti) {
    std::string reason;
    if (auto timer = make_cupti_timer(&reason)) return timer;
    if (why_not_cupti) *why_not_cupti = reason;
  } else if (why_not_cupti) {
    *why_not_cupti = "CUPTI not requested";
  }
  return make_event_timer();
}

}  // namespace cutune
