// The measuring flags through the binary, without a GPU: `tune --device emulator` end to end
// on a tiny GEMM (records, resume, report), and the refusals of the new flags.

#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_run.h"

using cutune::test::run_cutune;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir() {
  static const fs::path dir = [] {
    std::string templ = (fs::temp_directory_path() / "cutune-cli-measure-XXXXXX").string();
    return fs::path(mkdtemp(templ.data()));
  }();
  return dir;
}

std::vector<nlohmann::json> log_lines(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::istringstream in(cutune::test::slurp(p));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("tune --device emulator runs end to end: records, resume, report", "[cli]") {
  const fs::path log = scratch_dir() / "emulated.jsonl";
  fs::remove(log);
  const std::string task = "tune gemm --shape 24,20,8 --device emulator --batch 4 --seed 2 ";
  auto first = run_cutune(task + "--trials 6 --quiet --json --log " + log.string());
  INFO_RUN(first);
  REQUIRE(first.status == 0);
  CHECK(first.err.find("not GPU times") != std::string::npos);
  const nlohmann::json summary = nlohmann::json::parse(first.out);
  CHECK(summary["trials"] == 6);
  CHECK(summary["valid"].get<int>() >= 1);
  CHECK(summary["best"]["time_is"] == "CPU emulator wall time, not GPU time");
  std::vector<nlohmann::json> lines = log_lines(log);
  REQUIRE(lines.size() == 6);
  for (const nlohmann::json& l : lines) {
    CHECK(l["task"]["device"] == "emulator");
    if (l["result"]["status"] == "ok") {
      CHECK(l["result"]["timer"] == "emulator");
      CHECK(l["result"]["extra"]["emulated"] == true);
    }
  }

  // Resume to 8 trials, with a re-measurement of the 2 fastest at the end.
  auto resumed = run_cutune(task +
                            "--trials 8 --quiet --resume --remeasure-top 2 "
                            "--remeasure-rounds 2 --log " +
                            log.string());
  INFO_RUN(resumed);
  REQUIRE(resumed.status == 0);
  CHECK(resumed.out.find("8 trials (6 resumed, 2 measured)") != std::string::npos);
  CHECK(resumed.out.find("re-measurement of the 2 fastest") != std::string::npos);
  lines = log_lines(log);
  REQUIRE(lines.size() == 10);
  std::set<uint64_t> trials_configs;
  int remeasured = 0;
  for (const nlohmann::json& l : lines) {
    if (l.value("kind", "trial") == "remeasure") {
      ++remeasured;
      continue;
    }
    trials_configs.insert(l["config"]["index"].get<uint64_t>());
  }
  CHECK(trials_configs.size() == 8);  // no configuration measured twice as a trial
  CHECK(remeasured == 2);

  const fs::path page = scratch_dir() / "emulated.html";
  auto report = run_cutune("report " + log.string() + " --out " + page.string() + " --force");
  INFO_RUN(report);
  CHECK(report.status == 0);
  CHECK(fs::exists(page));
}

TEST_CASE("the measuring flags refuse bad values with one line", "[cli]") {
  auto device = run_cutune("tune gemm --shape 32,32,32 --device tpu --trials 2");
  INFO_RUN(device);
  CHECK(device.status == 2);
  CHECK(device.err_lines() == 1);
  CHECK(device.err.find("--device must be gpu or emulator") != std::string::npos);

  auto top = run_cutune("tune gemm --shape 32,32,32 --device emulator --remeasure-top -3");
  INFO_RUN(top);
  CHECK(top.status == 2);

  auto rounds = run_cutune(
      "tune gemm --shape 32,32,32 --device emulator --remeasure-rounds 0 "
      "--log " +
      (scratch_dir() / "never.jsonl").string());
  INFO_RUN(rounds);
  CHECK(rounds.status == 2);
  CHECK(rounds.err.find("--remeasure-rounds must be >= 1") != std::string::npos);

  auto bench_rounds = run_cutune("bench gemm --shape 64,64,64 --rounds 0");
  INFO_RUN(bench_rounds);
  CHECK(bench_rounds.status == 2);
}
