// The --spec forms as a user runs them: every command that takes --spec shows it in its --help
// and takes exactly one of an operator or --spec; space, show, compile and verify --spec work
// without a GPU, and verify --spec runs a user kernel of our own with the emulator's sanitizer
// (a race, a shared write out of bounds: exit 1); tune and bench --spec say in one line that
// there is none and leave no log; over a Kernel Tuner cache of the same kernel, tune --spec
// --replay searches, resumes and transfers; bad input is one line and exit code 2.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "src/runtime/driver_api.h"
#include "tests/cli/cli_run.h"
#include "tests/dataset_skip.h"

using cutune::driver_api;
using cutune::test::CliRun;
using cutune::test::run_cutune;

namespace {

const std::string kSource = CUTUNE_SOURCE_DIR;
const std::string kDatasets = kSource + "/../shared/datasets";

std::filesystem::path scratch(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() / ("cutune_spec_cli_" + name);
  std::filesystem::remove_all(p);
  return p;
}

nlohmann::json parse_stdout(const CliRun& r) {
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  return j;
}

// One line on stderr that says `needle`, nothing on stdout, exit code 2.
void check_usage_error(const std::string& args, const std::string& needle) {
  const CliRun r = run_cutune(args);
  INFO_RUN(r);
  CHECK(r.status == 2);
  CHECK(r.err_lines() == 1);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("cutune: ") && Catch::Contains(needle));
}

}  // namespace

TEST_CASE("every command that takes --spec shows it in its --help") {
  for (const std::string command :
       {"space", "show", "compile", "verify", "bench", "export", "tune"}) {
    const CliRun r = run_cutune(command + " --help");
    INFO_RUN(r);
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("--spec"));
  }
  const CliRun r = run_cutune("verify --help");
  CHECK_THAT(r.out, Catch::Contains("--problem-size"));
  const CliRun ex = run_cutune("export --help");
  CHECK_THAT(ex.out, Catch::Contains("--t4") && Catch::Contains("--problem-size") &&
                         Catch::Contains("--force"));
}

TEST_CASE("a command takes an operator or --spec FILE: neither or both is one line, exit 2") {
  const std::string spec = kSource + "/examples/reduction/reduce.json";
  for (const std::string command : {"space", "compile", "verify", "bench"}) {
    check_usage_error(command, "give an operator or --spec FILE");
    check_usage_error(command + " --shape 4,4,4", "give an operator or --spec FILE");
    check_usage_error(command + " gemm --shape 4,4,4 --spec " + spec, "not both");
    check_usage_error(command + " --spec " + spec + " gemm", "not both");
  }
  check_usage_error("show --config 0", "give an operator or --spec FILE");
  check_usage_error("show gemm --shape 4,4,4 --spec " + spec + " --config 0", "not both");
  // An operator still needs its shape; an option of the other form is refused, not ignored.
  check_usage_error("compile gemm", "--shape");
  check_usage_error("compile --spec " + spec + " --shape 4,4,4", "--shape");
  check_usage_error("show --spec " + spec + " --template gemm_simt --config 0", "--template");
  check_usage_error("compile --spec " + spec + " --sass --json", "--sass");
  check_usage_error("verify --spec " + spec + " --tolerance 0.1", "--tolerance");
  check_usage_error("bench --spec " + spec + " --rounds 3", "--rounds");
  check_usage_error("compile gemm --shape 4,4,4 --problem-size 4096", "--problem-size");
  check_usage_error("space gemm --shape 4,4,4 --arch sm_90", "--arch");
  check_usage_error("bench gemm --shape 4,4,4 --arch sm_90", "--arch");
  check_usage_error("export /nonexistent.jsonl --out /tmp/x --task t", "--task");
  check_usage_error("export /nonexistent.jsonl --out /tmp/x --t4 --spec " + spec, "not both");
  check_usage_error("export /nonexistent.jsonl --out /tmp/x --t4 --json", "--json");
}

TEST_CASE("space, show, compile and verify --spec describe, compile and check a user kernel") {
  const std::string spec = kSource + "/examples/reduction/reduce.json";
  nlohmann::json j = parse_stdout(run_cutune("space --spec " + spec + " --json"));
  CHECK(j["kernel"] == "reduce_sum");
  CHECK(j["problem_size"] == nlohmann::json({16777216}));
  CHECK(j["size"] == 216);
  CHECK(j["valid"] == 210);  // block_size_x 1024 with 2048 blocks is over the condition
  const CliRun text = run_cutune("space --spec " + spec + " --problem-size 4096");
  INFO_RUN(text);
  CHECK(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("kernel reduce_sum in") &&
                           Catch::Contains("problem size [4096]") &&
                           Catch::Contains("space size 216, valid 210"));

  j = parse_stdout(run_cutune("show --spec " + spec + " --problem-size 4096 --config 0 --json"));
  CHECK(j["kernel"] == "reduce_sum");
  CHECK(j["block"] == nlohmann::json({32, 1, 1}));  // config 0: the first value of each
  CHECK(j["grid"] == nlohmann::json({64, 1, 1}));   // min(64, 4096 / 32)
  CHECK_THAT(j["source"].get<std::string>(), Catch::Contains("reduce_sum"));

  j = parse_stdout(
      run_cutune("compile --spec " + spec + " --sample 2 --jobs 2 --seed 1 --arch sm_80 --json"));
  CHECK(j["arch"] == "sm_80");
  CHECK(j["configs"] == 2);
  CHECK(j["compiled"] == 2);
  CHECK(j["failed"] == 0);

  // Without --sample, verify --spec checks 20 configurations (the operator form: 10).
  j = parse_stdout(run_cutune("verify --spec " + spec + " --problem-size 4096 --seed 2 --json"));
  CHECK(j["total"] == 20);
  CHECK(j["passed"] == 20);
  const CliRun one =
      run_cutune("verify --spec " + spec + " --problem-size 4096 --config 5 --sample 1");
  INFO_RUN(one);
  CHECK(one.status == 0);
  CHECK_THAT(one.out, Catch::Contains("1 of 1 passed"));
}

namespace {

// A tiled kernel of our own, out[i] = in[i] + in[i-1] (out[0] = in[0]): each block stages its
// tile of `in` in a __shared__ array and reads its left neighbour's element from there, after
// `barrier` (a __syncthreads, or nothing: a race). `tile` is the array's length. The spec's
// reference is a second kernel that reads global memory only, unless `own_reference` (then it
// is the default configuration, as a new user's spec has it). ProblemSize 100, block sizes 32
// and 64: two configurations of 4 and 2 blocks.
std::string tile_kernel_spec(
    const std::string& name, const std::string& barrier, const std::string& tile,
    bool own_reference = false,
    const std::string& stage = "tile[threadIdx.x] = i < n ? in[i] : 0.0f;") {
  const auto dir = scratch(name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "shift.cu") << "extern \"C\" __global__ void shift_add(float* out, const "
                                     "float* in, int n) {\n"
                                     "  __shared__ float tile["
                                  << tile << "];\n"
                                  << R"(  const int i = blockIdx.x * block_size_x + threadIdx.x;
  )" << stage << "\n  " << barrier << R"(
  float left = 0.0f;
  if (threadIdx.x > 0) left = tile[threadIdx.x - 1];
  else if (i > 0 && i <= n) left = in[i - 1];
  if (i < n) out[i] = tile[threadIdx.x] + left;
}

extern "C" __global__ void shift_add_reference(float* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + (i > 0 ? in[i - 1] : 0.0f);
}
)";
  nlohmann::json spec = nlohmann::json::parse(R"({
  "General": {"BenchmarkName": "shift_add", "OutputFormat": "JSON", "FormatVersion": 1},
  "ConfigurationSpace": {
    "TuningParameters": [{"Name": "block_size_x", "Type": "int", "Values": "[32, 64]", "Default": 32}],
    "Conditions": []
  },
  "KernelSpecification": {
    "Language": "CUDA", "BenchmarkName": "shift_add", "KernelName": "shift_add",
    "KernelFile": "shift.cu", "GlobalSizeType": "CUDA",
    "LocalSize": {"X": "block_size_x", "Y": "1", "Z": "1"},
    "GlobalSize": {"X": "(ProblemSize[0] + block_size_x - 1) // block_size_x", "Y": "1", "Z": "1"},
    "ProblemSize": [100], "SharedMemory": 0,
    "Reference": {"KernelName": "shift_add_reference"},
    "Arguments": [
      {"Name": "out", "Type": "float", "MemoryType": "Vector", "AccessType": "WriteOnly",
       "FillType": "Constant", "FillValue": 0.0, "Size": "ProblemSize[0]", "Output": 1},
      {"Name": "in", "Type": "float", "MemoryType": "Vector", "AccessType": "ReadOnly",
       "FillType": "Random", "FillValue": 1.0, "Size": "ProblemSize[0]"},
      {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": "ProblemSize[0]"}
    ]
  }
})");
  if (own_reference) spec["KernelSpecification"].erase("Reference");
  std::ofstream(dir / "shift.json") << spec.dump(1);
  return (dir / "shift.json").string();
}

const std::string kSync = "__syncthreads();";

}  // namespace

TEST_CASE("verify --spec: a tiled user kernel with its __syncthreads verifies clean",
          "[spec_verify][emulator]") {
  const auto r = run_cutune("verify --spec " + tile_kernel_spec("clean", kSync, "block_size_x") +
                            " --sample 2");
  INFO_RUN(r);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("2 of 2 passed"));
  CHECK(r.err.empty());
}

TEST_CASE(
    "verify --spec: the same kernel without its __syncthreads is a race in every "
    "configuration, exit 1",
    "[spec_verify][emulator]") {
  const std::string spec = tile_kernel_spec("race", "", "block_size_x");
  const auto r = run_cutune("verify --spec " + spec + " --sample 2 --json");
  INFO_RUN(r);
  CHECK(r.status == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["passed"] == 0);
  REQUIRE(j["results"].size() == 2);
  for (const auto& row : j["results"]) {
    CHECK(row["status"] == "race");
    CHECK_THAT(row["message"].get<std::string>(),
               Catch::Contains("data race on shared tile[") &&
                   Catch::Contains("no __syncthreads between them"));
  }
  // Without the race check the threads' values happen to be right (the emulator runs a block's
  // threads in turn): the race goes unseen, as before the sanitizer reached --spec.
  const auto off = run_cutune("verify --spec " + spec + " --config 0 --no-racecheck");
  INFO_RUN(off);
  CHECK(off.status == 0);
  CHECK_THAT(off.out, Catch::Contains("1 of 1 passed"));
}

TEST_CASE("verify --spec: a reference configuration that races is reported, exit 1",
          "[spec_verify][emulator]") {
  // A new user's spec: the reference is the kernel's own default configuration.
  const auto r =
      run_cutune("verify --spec " + tile_kernel_spec("race_reference", "", "block_size_x", true) +
                 " --sample 2");
  INFO_RUN(r);
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("reference  race") &&
                        Catch::Contains("data race on shared tile[") &&
                        Catch::Contains("0 of 2 passed"));
}

TEST_CASE(
    "verify --spec: uninitialised shared reads whose values reach no output are a note, and "
    "fail under --strict",
    "[spec_verify][emulator]") {
  // The last block stages only the elements below n, then every thread passes its element
  // through a register (a second pass over the tile, as a kernel with several stages has):
  // the threads past n read tile elements nobody wrote, and their sums are never stored.
  const std::string spec = tile_kernel_spec("edge_tile", kSync, "block_size_x", false,
                                            "if (i < n) tile[threadIdx.x] = in[i];\n"
                                            "  __syncthreads();\n"
                                            "  const float staged = tile[threadIdx.x];\n"
                                            "  __syncthreads();\n"
                                            "  tile[threadIdx.x] = staged;");
  const auto r = run_cutune("verify --spec " + spec + " --sample 2 --json");
  INFO_RUN(r);
  CHECK(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["results"].size() == 2);
  for (const auto& row : j["results"]) {
    CHECK(row["status"] == "ok");
    CHECK(row["uninitialised_reads"].get<int>() > 0);
    CHECK_THAT(row["message"].get<std::string>(),
               Catch::Matches("note: [0-9]+ uninitialised shared reads whose values reached no "
                              "output"));
  }
  const auto strict = run_cutune("verify --spec " + spec + " --config 0 --strict");
  INFO_RUN(strict);
  CHECK(strict.status == 1);
  CHECK_THAT(strict.out, Catch::Contains("uninitialized_read") &&
                             Catch::Contains("read of uninitialised shared tile[") &&
                             Catch::Contains("0 of 1 passed"));
  // Staging one element fewer: the last sum reads a tile element nobody wrote and stores it.
  const auto reaches = run_cutune("verify --spec " +
                                  tile_kernel_spec("edge_tile_bug", kSync, "block_size_x", false,
                                                   "if (i < n - 1) tile[threadIdx.x] = in[i];") +
                                  " --config 0");
  INFO_RUN(reaches);
  CHECK(reaches.status == 1);
  CHECK_THAT(reaches.out, Catch::Contains("uninitialized_read") &&
                              Catch::Contains("its value reaches an output: out[99]"));
}

TEST_CASE("verify --spec: a shared write out of bounds is reported, exit 1",
          "[spec_verify][emulator]") {
  // The tile is one element short: the block's last thread writes past it.
  const auto r =
      run_cutune("verify --spec " + tile_kernel_spec("shared_oob", kSync, "block_size_x - 1") +
                 " --config 1 --json");
  INFO_RUN(r);
  CHECK(r.status == 1);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["results"].size() == 1);
  CHECK(j["results"][0]["status"] == "shared_out_of_bounds");
  CHECK_THAT(j["results"][0]["message"].get<std::string>(), Catch::Contains("tile"));
}

TEST_CASE("tune --spec and bench --spec measure on a GPU, or say in one line that there is none") {
  const auto log = scratch("gpu.jsonl");
  const auto r = run_cutune("tune --spec " + kSource +
                            "/examples/reduction/reduce.json --trials 4 --batch 4 --quiet --log " +
                            log.string());
  INFO_RUN(r);
  // Whether there is a GPU is the driver's answer in this process, not the exit status under test.
  if (driver_api() != nullptr) {  // the records are there
    CHECK(r.status == 0);
    CHECK((std::filesystem::exists(log) && std::filesystem::file_size(log) > 0));
  } else {
    CHECK(r.status == 1);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Catch::Contains("no CUDA device") && Catch::Contains("verify --spec"));
    CHECK_FALSE(std::filesystem::exists(log));
    const auto b = run_cutune("bench --spec " + kSource + "/examples/reduction/reduce.json");
    INFO_RUN(b);
    CHECK(b.status == 1);
    CHECK(b.err_lines() == 1);
  }
  std::filesystem::remove_all(log);
}

TEST_CASE("tune --spec over a cache of the same kernel searches, resumes and transfers") {
  const std::string spec = kDatasets + "/spaces/convolution_old.json";
  const std::string cache = kDatasets + "/convolution_old/RTX_3090.json.gz";
  const std::string other = kDatasets + "/convolution_old/RTX_2080_Ti.json.gz";
  for (const std::string& p : {spec, cache, other}) cutune::test::require_dataset_path(p);
  const auto log = scratch("replay.jsonl");
  const std::string base = "tune --spec " + spec + " --replay " + cache +
                           " --batch 16 --quiet --json --log " + log.string();
  const auto a = run_cutune(base + " --trials 32");
  INFO_RUN(a);
  REQUIRE(a.status == 0);
  CHECK(nlohmann::json::parse(a.out)["measured"] == 32);
  const auto b = run_cutune(base + " --trials 48 --resume --transfer-from " + other);
  INFO_RUN(b);
  REQUIRE(b.status == 0);
  const auto j = nlohmann::json::parse(b.out);
  CHECK(j["resumed"] == 32);
  CHECK(j["measured"] == 16);
  CHECK_THAT(b.err, Catch::Contains("transfer: global model on 6768 records of 1 other task"));
  // The records are of the spec's kernel; export needs its source, which the dataset lacks.
  const auto e = run_cutune("export " + log.string() + " --spec " + spec + " --out " +
                            scratch("export").string());
  INFO_RUN(e);
  CHECK(e.status == 2);
  CHECK(e.err_lines() == 1);
  CHECK_THAT(e.err, Catch::Contains("KernelFile"));
  std::filesystem::remove_all(log);
}

TEST_CASE("bad --spec command lines are one line and exit code 2") {
  const std::string spec = kSource + "/examples/reduction/reduce.json";
  for (const std::string& args : std::vector<std::string>{
           "tune --spec " + spec + " gemm --shape 4,4,4", "tune --spec /nonexistent/spec.json",
           "bench --spec /nonexistent/spec.json", "bench --spec " + spec + " --seconds 0",
           "bench --spec " + spec + " --config 999999999",
           "export /nonexistent.jsonl --spec " + spec + " --out /tmp/x"}) {
    const auto r = run_cutune(args);
    INFO_RUN(r);
    CHECK(r.status == 2);
    CHECK(r.err_lines() == 1);
  }
}
