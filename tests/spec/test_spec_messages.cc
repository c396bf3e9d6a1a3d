// What the --spec commands say and how they end (issue 51, item 3): verify exits 1 unless every
// configuration passes and says what it compares with; compile exits 1 when nothing compiles
// and shows each distinct compiler log once, its error first; a malformed spec is one line that
// says where; a problem too large to emulate is refused before anything is allocated; a list of
// a million values is neither slow nor printed whole; a Default outside its Values is a
// warning and a reference configuration outside the conditions an error.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_run.h"

using cutune::test::CliRun;
using cutune::test::run_cutune;
namespace fs = std::filesystem;

namespace {

// A folder of this test's own, removed with everything in it.
class Scratch {
 public:
  fs::path operator/(const std::string& name) const { return dir_ / name; }

 private:
  cutune::test::ProcessTempDir owner_{"cutune-spec-messages"};
  fs::path dir_ = owner_.path();
};

// out[i] = 2 * in[i] over ProblemSize 256, block_size_x 32 or 64 (Default 32), `body` put
// before the store (it may change `v`); `edit` changes the spec's JSON. Returns the spec.
std::string doubling_spec(const Scratch& dir, const std::string& body,
                          const std::function<void(nlohmann::json&)>& edit = {}) {
  std::ofstream(dir / "twice.cu") << "extern \"C\" __global__ void twice(float* out, const float* "
                                     "in, int n) {\n"
                                     "  const int i = blockIdx.x * block_size_x + threadIdx.x;\n"
                                     "  if (i >= n) return;\n"
                                     "  float v = 2.0f * in[i];\n"
                                  << body << "\n  out[i] = v;\n}\n";
  nlohmann::json spec = nlohmann::json::parse(R"({
  "General": {"BenchmarkName": "twice", "OutputFormat": "JSON", "FormatVersion": 1},
  "ConfigurationSpace": {
    "TuningParameters": [{"Name": "block_size_x", "Type": "int", "Values": "[32, 64]", "Default": 32}],
    "Conditions": []
  },
  "KernelSpecification": {
    "Language": "CUDA", "BenchmarkName": "twice", "KernelName": "twice",
    "KernelFile": "twice.cu", "GlobalSizeType": "CUDA",
    "LocalSize": {"X": "block_size_x", "Y": "1", "Z": "1"},
    "GlobalSize": {"X": "(ProblemSize[0] + block_size_x - 1) // block_size_x", "Y": "1", "Z": "1"},
    "ProblemSize": [256], "SharedMemory": 0,
    "Arguments": [
      {"Name": "out", "Type": "float", "MemoryType": "Vector", "AccessType": "WriteOnly",
       "FillType": "Constant", "FillValue": 0.0, "Size": "ProblemSize[0]", "Output": 1},
      {"Name": "in", "Type": "float", "MemoryType": "Vector", "AccessType": "ReadOnly",
       "FillType": "Random", "FillValue": 1.0, "Size": "ProblemSize[0]"},
      {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": "ProblemSize[0]"}
    ]
  }
})");
  if (edit) edit(spec);
  std::ofstream(dir / "twice.json") << spec.dump(1);
  return (dir / "twice.json").string();
}

void check_usage_error(const CliRun& r, const std::string& needle) {
  INFO_RUN(r);
  CHECK(r.status == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::StartsWith("cutune: ") && Catch::Contains(needle));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("verify --spec exits 1 when one configuration of two is wrong, and says what it "
          "compares with",
          "[spec_verify][emulator]") {
  Scratch dir;
  const std::string spec = doubling_spec(dir, "  if (block_size_x == 64 && i == 3) v += 1.0f;");
  const CliRun r = run_cutune("verify --spec " + spec + " --sample 2");
  INFO_RUN(r);
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("1 of 2 passed") && Catch::Contains("mismatch"));
  CHECK_THAT(r.out, Catch::Contains("reference: twice at block_size_x=32 (the parameters' "
                                    "Defaults); tolerance out "));

  const CliRun j = run_cutune("verify --spec " + spec + " --sample 2 --json");
  INFO_RUN(j);
  CHECK(j.status == 1);
  const nlohmann::json out = nlohmann::json::parse(j.out);
  CHECK(out["passed"] == 1);
  CHECK(out["reference"]["kind"] == "configuration");
  CHECK(out["reference"]["configuration"]["knobs"]["block_size_x"] == 32);
  CHECK(out["reference"]["tolerance"]["out"].get<double>() > 0);
}

TEST_CASE("verify --spec: a reference configuration that violates a condition is an error",
          "[spec_verify]") {
  Scratch dir;
  const std::string spec = doubling_spec(dir, "", [](nlohmann::json& j) {
    j["ConfigurationSpace"]["Conditions"].push_back({{"Expression", "block_size_x > 32"}});
  });
  check_usage_error(run_cutune("verify --spec " + spec + " --sample 1"),
                    "the reference configuration (block_size_x=32) violates the condition "
                    "block_size_x > 32");
}

TEST_CASE("a Default that is not among its Values is a one-line warning") {
  Scratch dir;
  const std::string spec = doubling_spec(dir, "", [](nlohmann::json& j) {
    j["ConfigurationSpace"]["TuningParameters"][0]["Default"] = 48;
  });
  const CliRun r = run_cutune("space --spec " + spec);
  INFO_RUN(r);
  CHECK(r.status == 0);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("warning") &&
                        Catch::Contains("parameter 'block_size_x' has Default 48, which is not "
                                        "among its Values; its first value, 32, stands for it"));
}

TEST_CASE("compile --spec: nothing compiles is exit 1, each log shown once, its error first") {
  Scratch dir;
  // NVRTC reports the #warning before the #error.
  const std::string spec = doubling_spec(dir, "#warning \"a warning first\"\n#error \"broken\"");
  const CliRun r = run_cutune("compile --spec " + spec + " --arch sm_80");
  INFO_RUN(r);
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("0 compiled, 2 failed"));
  CHECK(count(r.out, "#error directive") == 1);
  CHECK_THAT(r.out, Catch::Contains("config 0, 1 failed:\n"));
  const size_t error = r.out.find("#error directive"), warning = r.out.find("a warning first");
  CHECK(error < warning);
  CHECK(r.out.find('\0') == std::string::npos);

  const CliRun j = run_cutune("compile --spec " + spec + " --arch sm_80 --json");
  INFO_RUN(j);
  CHECK(j.status == 1);
  const nlohmann::json out = nlohmann::json::parse(j.out);
  REQUIRE(out["failures"].size() == 1);
  CHECK(out["failures"][0]["configs"] == nlohmann::json({0, 1}));
  const std::string log = out["failures"][0]["log"];
  CHECK_THAT(log.substr(0, log.find('\n')), Catch::Contains("error"));
}

TEST_CASE("a spec that is not valid JSON is one line with the line and column") {
  Scratch dir;
  std::ofstream(dir / "bad.json") << "{\n  \"General\": {},\n  \"ConfigurationSpace\": {,}\n}\n";
  check_usage_error(run_cutune("space --spec " + (dir / "bad.json").string()),
                    "is not valid JSON: line 3, column 26: syntax error");
}

TEST_CASE("a huge --problem-size is refused in one line before anything is allocated",
          "[spec_verify]") {
  Scratch dir;
  const std::string spec = doubling_spec(dir, "");
  check_usage_error(
      run_cutune("verify --spec " + spec + " --problem-size 100000000000 --sample 1"),
      "more than the emulator takes (1 GiB); give a smaller --problem-size");
}

TEST_CASE("a parameter of a million values is read at once and not printed whole") {
  Scratch dir;
  const std::string spec = doubling_spec(dir, "", [](nlohmann::json& j) {
    j["ConfigurationSpace"]["TuningParameters"].push_back(
        {{"Name", "unused"}, {"Type", "int"}, {"Values", "[i for i in range(1000000)]"}});
  });
  const CliRun r = run_cutune("space --spec " + spec);
  INFO_RUN(r);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("1000000 values  [0, 1, 2, 3, 4, 5, 6, 7, ... (1000000 values)]"));
  CHECK(r.out.size() < 2000);
}
