// The measuring flags through the binary, without a GPU: `tune --device emulator` end to end
// on a tiny GEMM (records, resume, report), and the refusals of the new flags.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_run.h"

using cutune::test::run_cutune;
namespace fs = std::filesystem;

namespace {

const fs::path& scratch_dir() {
  static const cutune::test::ProcessTempDir dir("cutune-cli-measure");
  return dir.path();
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

  // bench --config: each configuration is checked before the GPU is looked for.
  auto malformed = run_cutune("bench gemm --shape 64,64,64 --config '{bad'");
  INFO_RUN(malformed);
  CHECK(malformed.status == 2);
  CHECK(malformed.err_lines() == 1);
  CHECK(malformed.err.find("bad --config '{bad'") != std::string::npos);
  auto violating = run_cutune(
      "bench gemm_fp16 --shape 256,256,256 --template gemm_fp16_wgmma_nt --config "
      "'{\"knobs\":{\"block_m\":128,\"block_n\":128,\"block_k\":64,\"stages\":4,"
      "\"warpgroups\":2,\"swizzle\":128,\"copy_bytes\":16,\"raster_group\":1,"
      "\"split_k\":1,\"epilogue\":1,\"loads\":1,\"producer\":0,\"tiles_per_block\":2}}'");
  INFO_RUN(violating);
  CHECK(violating.status == 2);
  CHECK(violating.err_lines() == 1);
  CHECK(violating.err.find("several tiles a block need a producer") != std::string::npos);
}

TEST_CASE("tune --transfer-from learns from the fp16 variant of a bf16 template", "[cli]") {
  const fs::path fp16 = scratch_dir() / "fp16_wgmma.jsonl", bf16 = scratch_dir() / "bf16.jsonl";
  fs::remove(fp16);
  fs::remove(bf16);
  const std::string common = " --device emulator --trials 6 --batch 3 --quiet --log ";
  auto source = run_cutune("tune gemm_fp16 --shape 64,64,64 --template gemm_fp16_wgmma_nt" +
                           common + fp16.string());
  INFO_RUN(source);
  REQUIRE(source.status == 0);
  auto target = run_cutune("tune gemm_bf16 --shape 64,64,128 --template gemm_bf16_wgmma_nt" +
                           common + bf16.string() + " --transfer-from " + fp16.string());
  INFO_RUN(target);
  REQUIRE(target.status == 0);
  // Every fp16 record places in the bf16 template's features.
  CHECK(target.err.find("transfer: global model on 6 records of 1 other task(s)") !=
        std::string::npos);
  // The fp32 SGEMM's features are other ones: nothing to learn from, which is a user error.
  auto other =
      run_cutune("tune gemm --shape 24,20,8 --device emulator --trials 2 --quiet --log " +
                 (scratch_dir() / "fp32.jsonl").string() + " --transfer-from " + fp16.string());
  INFO_RUN(other);
  CHECK(other.status == 2);
  CHECK(other.err ==
        "cutune: --transfer-from: no usable records of another task with this task's features "
        "(of its template, or of one with the same features)\n");
}

TEST_CASE("a log of an operator name of before resumes under its task parameters", "[cli]") {
  // Written by `tune gemm_fp16 --template gemm_fp16_nt`; resumed by the same task spelled as a
  // computation with parameters; a run that names another template refuses the log.
  const fs::path log = scratch_dir() / "fp16_nt.jsonl";
  fs::remove(log);
  const std::string common = " --shape 16,16,16 --device emulator --batch 2 --seed 1 --quiet ";
  auto first =
      run_cutune("tune gemm_fp16 --template gemm_fp16_nt" + common + "--trials 2 --log " + log.string());
  INFO_RUN(first);
  REQUIRE(first.status == 0);
  REQUIRE(log_lines(log).size() == 2);
  CHECK(log_lines(log)[0]["task"]["template"] == "gemm_fp16_nt");
  auto resumed = run_cutune("tune gemm --dtype fp16 --layout nt --family mma" + common +
                            "--trials 3 --resume --log " + log.string());
  INFO_RUN(resumed);
  REQUIRE(resumed.status == 0);
  CHECK(resumed.out.find("3 trials (2 resumed, 1 measured)") != std::string::npos);
  CHECK(log_lines(log).size() == 3);
  auto other = run_cutune("tune gemm --dtype fp16 --layout nn --family mma" + common +
                          "--trials 4 --resume --log " + log.string());
  INFO_RUN(other);
  CHECK(other.status == 2);
  CHECK(log_lines(log).size() == 3);
}

TEST_CASE("tune-suite --model tunes a model's GEMMs at each token count in the emulator",
          "[cli]") {
  const fs::path model = scratch_dir() / "tiny_model.json";
  {
    std::ofstream out(model);
    out << R"({"name": "tiny", "repeat": 2, "gemms": [{"name": "up", "n": 24, "k": 16}]})";
  }
  const fs::path log = scratch_dir() / "tiny_model.jsonl";
  fs::remove(log);
  auto r = run_cutune("tune-suite --model " + model.string() +
                      " --tokens 1,5 --dtype fp16 --device emulator --trials 2 --batch 2 --quiet "
                      "--json --log " +
                      log.string());
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["library"] == "cuBLAS");
  REQUIRE(j["layers"].size() == 2);
  CHECK(j["layers"][0]["name"] == "up.m1");
  CHECK(j["layers"][1]["shape"] == nlohmann::json::array({5, 24, 16}));
  CHECK(j["layers"][1]["repeat"] == 2);
  CHECK(j["layers"][1]["template"] == "gemm_fp16_wgmma_nt");
  CHECK(j["summed_tuned_s"].is_null());  // the emulator measures no cuBLAS time
  std::set<std::vector<int64_t>> shapes;
  for (const nlohmann::json& l : log_lines(log)) shapes.insert(l["task"]["shape"]);
  CHECK(shapes == std::set<std::vector<int64_t>>{{1, 24, 16}, {5, 24, 16}});
}
