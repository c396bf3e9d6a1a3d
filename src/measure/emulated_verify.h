#pragma once
// `cutune verify` in the emulator, one for templates (check_in_emulator) and user kernels from
// T1 specs (spec::SpecVerifier): the emulator is built here with the sanitizer as the command
// asks (races, unless --no-racecheck; shared bounds and uninitialised shared reads always, the
// latter by the tracked rule unless --strict; the sampled blocks, or all with --all-blocks),
// and each configuration's check is reported and counted here: one line (or JSON row) with its
// status and, when it failed, one line of what and where (when it passed with uninitialised
// reads the tracked rule let pass, the note that counts them); the command exits 1 unless
// every configuration passed.

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "src/emulator/emulator.h"
#include "src/measure/emulated_check.h"
#include "src/space/config_space.h"

namespace cutune {

struct VerifySanitizer {
  bool racecheck = true;    // --no-racecheck: false
  bool all_blocks = false;  // --all-blocks
  bool strict = false;      // --strict: every uninitialised shared read fails
};

// The help of verify's two sanitizer flags, the same for templates and specs.
inline constexpr const char* kNoRacecheckHelp =
    "skip the emulator's data-race check (bounds and uninitialised reads stay)";
inline constexpr const char* kStrictHelp =
    "fail on every read of shared memory no thread of the block wrote (default: only on one "
    "whose value reaches an output, a branch or an address; the others are a note)";
inline constexpr const char* kAllBlocksHelp =
    "run every block with the sanitizer (default: the grid's corners, their neighbours and the "
    "middle block; the rest run plain)";

// The emulator options of a verify: the sanitizer's race check unless turned off, its memory
// check (bounds, uninitialised shared reads: tracked, or strict) always.
emu::EmulatorOptions verify_emulator_options(const VerifySanitizer& sanitizer);

// The configurations' checks of one verify, in order.
class VerifyReport {
 public:
  explicit VerifyReport(size_t total) : total_(total) {}

  // Counts `check` and keeps its JSON row; returns its line of text:
  // "[i/n] config INDEX  passed|STATUS  max rel error E  MESSAGE".
  std::string add(const Config& config, const EmulatedCheck& check);

  int passed() const { return passed_; }
  int rejected() const { return rejected_; }
  size_t total() const { return total_; }
  // Every configuration was checked and passed: verify exits 0 only then.
  bool all_passed() const { return passed_ == static_cast<int>(total_); }
  const nlohmann::json& results() const { return results_; }
  // "P of N passed (R rejected <rejected_by>) in S s".
  std::string summary(double seconds, const std::string& rejected_by) const;

 private:
  size_t total_ = 0;
  int passed_ = 0, rejected_ = 0;
  nlohmann::json results_ = nlohmann::json::array();
};

}  // namespace cutune
