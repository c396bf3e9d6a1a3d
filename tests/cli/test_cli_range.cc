// `tune --shape M=lo..hi,N,K` through the binary, without a GPU: an emulated range on a tiny
// GEMM end to end (points tuned, the matrix, the table, the checks between the points, the
// records in one log, the table exported, bench refusing without a GPU), and bad range text
// refused in one line.

#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_run.h"

using cutune::test::run_cutune;
namespace fs = std::filesystem;

namespace {

const fs::path& scratch_dir() {
  static const cutune::test::ProcessTempDir dir("cutune-cli-range");
  return dir.path();
}

}  // namespace

TEST_CASE("cli: bad range text exits 2 with one line", "[cli][range]") {
  for (const char* shape :
       {"M=8..1,64,48", "Q=1..4,64,48", "M=1..4,N=1..8,48", "M=1..4,1..8,48", "M=1..4,64"}) {
    auto r = run_cutune(std::string("tune gemm --device emulator --shape ") + shape);
    INFO_RUN(r);
    CHECK(r.status == 2);
    CHECK(r.err_lines() == 1);
  }
  auto points = run_cutune("tune gemm --device emulator --shape 8,64,48 --points 4");
  INFO_RUN(points);
  CHECK(points.status == 2);
  CHECK(points.err.find("--points takes a range of M") != std::string::npos);
  auto conv = run_cutune("tune conv2d --device emulator --shape M=1..4,64,48");
  INFO_RUN(conv);
  CHECK(conv.status == 2);
  CHECK(conv.err.find("a range of M is for gemm") != std::string::npos);
}

TEST_CASE("cli: an emulated range of M ends in a dispatch table that exports", "[cli][range]") {
  const fs::path log = scratch_dir() / "range.jsonl", table = scratch_dir() / "table.json";
  // Two points (1 and 64), one trial each, the best of each point timed at both and at the M
  // between them (8). Emulator times are wall times, so the tolerance admits every kernel
  // that ran: one kernel serves the whole range, the fewest there can be.
  auto r = run_cutune(
      "tune gemm --shape M=1..64,64,48 --device emulator --tuner random "
      "--trials 1 --batch 1 --points 2 --candidates 1 --tolerance 9 --quiet "
      "--json --log " +
      log.string() + " --table " + table.string());
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["template"] == "gemm_nn_dynm");
  CHECK(j["m_range"] == nlohmann::json::array({1, 64}));
  REQUIRE(j["table"].size() == 1);
  CHECK(j["table"][0]["m_lo"] == 1);
  CHECK(j["table"][0]["m_hi"] == 64);
  REQUIRE(j["points"].size() == 2);
  for (const nlohmann::json& p : j["points"]) CHECK(p["kernel"] == 0);
  REQUIRE(j["checks"].size() == 1);
  CHECK(j["checks"][0]["m"] == 8);
  CHECK(j["time_is"] == "CPU emulator wall time, not GPU time");
  // The log holds the points' trials and the matrix's and checks' measurements, each of the
  // run-time-M template at its own M.
  std::istringstream in(cutune::test::slurp(log));
  std::set<int64_t> ms;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json rec = nlohmann::json::parse(line);
    CHECK(rec["task"]["template"] == "gemm_nn_dynm");
    ms.insert(rec["task"]["shape"][0].get<int64_t>());
  }
  CHECK(ms == std::set<int64_t>{1, 8, 64});  // the points and the check between them
  CHECK(fs::exists(table));

  const fs::path out = scratch_dir() / "exported";
  auto ex = run_cutune("export --table " + table.string() + " --out " + out.string() + " --json");
  INFO_RUN(ex);
  REQUIRE(ex.status == 0);
  const nlohmann::json manifest = nlohmann::json::parse(cutune::test::slurp(out / "manifest.json"));
  REQUIRE(manifest["dispatch"]["table"].size() == 1);
  CHECK(manifest["dispatch"]["table"][0]["kernel"] == manifest["kernels"][0]["name"]);
  CHECK(manifest["kernels"][0]["runtime_m"]["axis"] == 1);

  // bench times the table against cuBLAS on a GPU; without one it ends in one line, after the
  // table and the range have been checked.
  auto bench = run_cutune("bench gemm --shape M=1..64,64,48 --table " + table.string());
  INFO_RUN(bench);
  CHECK(bench.status == 1);
  CHECK(bench.err_lines() == 1);
  auto other = run_cutune("bench gemm --shape M=1..64,64,32 --table " + table.string());
  INFO_RUN(other);
  CHECK(other.status == 2);
  CHECK(other.err.find("not the --shape's") != std::string::npos);
}
