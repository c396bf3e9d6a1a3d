#include "src/measure/emulated_verify.h"

#include <cmath>

#include <fmt/format.h>

namespace cutune {

emu::EmulatorOptions verify_emulator_options(const VerifySanitizer& sanitizer) {
  emu::EmulatorOptions options;
  options.racecheck = sanitizer.racecheck;
  options.memcheck = true;
  options.sanitize_all_blocks = sanitizer.all_blocks;
  options.strict_uninitialised = sanitizer.strict;
  return options;
}

std::string VerifyReport::add(const Config& config, const EmulatedCheck& check) {
  passed_ += check.passed;
  rejected_ += check.status == "rejected";
  const bool finite = std::isfinite(check.max_rel_error);
  const std::string message =
      check.passed && check.uninitialised_reads > 0
          ? fmt::format("note: {} uninitialised shared reads whose values reached no output",
                        check.uninitialised_reads)
          : check.message;
  results_.push_back(
      {{"config", config.to_json()},
       {"passed", check.passed},
       {"status", check.status},
       {"max_rel_error", finite ? nlohmann::json(check.max_rel_error) : nlohmann::json(nullptr)},
       {"message", message},
       {"uninitialised_reads", check.uninitialised_reads},
       {"compile_seconds", check.compile_seconds},
       {"run_seconds", check.run_seconds}});
  return fmt::format("[{}/{}] config {:>10}  {:<13} max rel error {:<10} {}", results_.size(),
                     total_, config.index(), check.passed ? "passed" : check.status,
                     finite ? fmt::format("{:.2e}", check.max_rel_error) : "-", message);
}

std::string VerifyReport::summary(double seconds, const std::string& rejected_by) const {
  return fmt::format("{} of {} passed ({} rejected {}) in {:.1f} s", passed_, total_, rejected_,
                     rejected_by, seconds);
}

}  // namespace cutune
