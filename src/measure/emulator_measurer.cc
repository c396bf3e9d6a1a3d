#include "src/measure/emulator_measurer.h"

#include <cmath>

#include <fmt/format.h>

#include "src/emulator/emulator.h"
#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"

namespace cutune {

namespace {

MeasureStatus status_of(const std::string& emulator_status) {
  if (emulator_status == "ok") return MeasureStatus::ok;
  if (emulator_status == "wrong_answer") return MeasureStatus::wrong_answer;
  if (emulator_status == "compile_error") return MeasureStatus::compile_error;
  if (emulator_status == "timeout") return MeasureStatus::timeout;
  return MeasureStatus::runtime_error;  // crashed, out of bounds, race, divergence, ...
}

class EmulatorMeasurer final : public Measurer {
 public:
  EmulatorMeasurer(const Template& tmpl, EmulatorMeasureOptions options)
      : tmpl_(tmpl), options_(std::move(options)), emulator_(emulator_options(options_)) {}

  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    return measure_streaming(batch, {});
  }

  std::vector<MeasureResult> measure_streaming(const std::vector<Config>& batch,
                                               const ResultSink& on_result) override {
    std::vector<MeasureResult> out;
    out.reserve(batch.size());
    for (const Config& c : batch) {
      out.push_back(measure_one(c));
      if (on_result) on_result(out.size() - 1, out.back());
    }
    return out;
  }

  std::string device_name() const override { return kEmulatorDevice; }
  std::string target_arch() const override { return options_.limits.arch; }

 private:
  static emu::EmulatorOptions emulator_options(const EmulatorMeasureOptions& o) {
    emu::EmulatorOptions e;
    e.host_threads = o.host_threads;
    e.timeout_seconds = o.timeout_seconds;
    e.work_dir = o.work_dir;
    e.racecheck = o.sanitize;
    e.memcheck = o.sanitize;
    e.arch = o.limits.arch;  // whose SMs a persistent kernel's grid is sized for
    return e;
  }

  MeasureResult measure_one(const Config& config) {
    MeasureResult r;
    const Lowered lowered = lower(tmpl_, config, options_.limits);
    if (!lowered.ok()) {
      r.status = MeasureStatus::invalid;
      r.error = lowered.verify.errors.empty() ? "rejected by the verifier"
                                              : lowered.verify.errors.front();
      return r;
    }
    const EmulatedCheck check =
        check_source_in_emulator(tmpl_, *lowered.source, emulator_, std::nullopt, options_.seed);
    r.status = check.passed ? MeasureStatus::ok : status_of(check.status);
    r.compile_s = check.compile_seconds;
    if (!check.passed) {
      r.error = check.status == "wrong_answer" || check.status == "compile_error" ||
                        check.status == "timeout"
                    ? check.message
                    : fmt::format("emulator: {}: {}", check.status, check.message);
      if (r.error.empty()) r.error = check.status;
    }
    if (std::isfinite(check.max_rel_error) && check.max_rel_error >= 0)
      r.max_rel_error = check.max_rel_error;
    // The run's wall time ranks candidates only among themselves, and is labelled so.
    if (check.run_seconds > 0 && (r.ok() || r.status == MeasureStatus::wrong_answer)) {
      r.times_s = {check.run_seconds};
      r.timer = TimerKind::emulator;
    }
    EmulatorFacts& e = r.details.emulator;
    e.emulated = true;
    e.time_is = "CPU emulator wall time, not GPU time";
    e.emulator_status = check.status;
    e.tolerance = check.tolerance;
    return r;
  }

  const Template& tmpl_;
  EmulatorMeasureOptions options_;
  emu::Emulator emulator_;
};

}  // namespace

std::unique_ptr<Measurer> make_emulator_measurer(const Template& tmpl,
                                                 EmulatorMeasureOptions options) {
  return std::make_unique<EmulatorMeasurer>(tmpl, std::move(options));
}

}  // namespace cutune
