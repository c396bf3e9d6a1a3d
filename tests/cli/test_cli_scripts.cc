// A command line that scripts can trust (issue 10, items 5 to 7): exit codes, one-line
// messages, logs that are never mixed up, defaults that match their help.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "src/runtime/driver_api.h"
#include "tests/cli/cli_run.h"

using cutune::test::CliRun;
using cutune::test::run_cutune;
using cutune::test::slurp;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  std::string templ = (fs::temp_directory_path() / "cutune-scripts-XXXXXX").string();
  return fs::path(mkdtemp(templ.data()));
}

// A Kernel Tuner cache of `side` x `side` points named `device`, one optimum at (a=3, b=5).
fs::path write_cache(const fs::path& dir, const std::string& device, int side = 8) {
  std::string values, cache;
  for (int i = 0; i < side; ++i) values += (i ? "," : "") + std::to_string(i);
  for (int a = 0; a < side; ++a) {
    for (int b = 0; b < side; ++b) {
      const double t = 1.0 + 0.1 * (a - 3) * (a - 3) + 0.05 * (b - 5) * (b - 5);
      cache += (cache.empty() ? "" : ",") + std::string("\"") + std::to_string(a) + "," +
               std::to_string(b) + "\":{\"a\":" + std::to_string(a) +
               ",\"b\":" + std::to_string(b) + ",\"time\":" + std::to_string(t) + "}";
    }
  }
  std::string file = device + ".json";
  for (char& c : file) c = c == ' ' ? '_' : c;
  const fs::path p = dir / file;
  std::ofstream(p) << "{\"device_name\":\"" << device
                   << "\",\"kernel_name\":\"toy\",\"problem_size\":[64],"
                      "\"tune_params_keys\":[\"a\",\"b\"],\"tune_params\":{\"a\":["
                   << values << "],\"b\":[" << values << "]},\"cache\":{" << cache << "}}";
  return p;
}

int lines_in(const fs::path& p) {
  std::ifstream in(p);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

}  // namespace

// --- item 5: verify ---------------------------------------------------------------------

TEST_CASE("cli scripts: verify exits 1 when a configuration fails, 0 when all pass",
          "[cli][emulator]") {
  CliRun fail = run_cutune("verify gemm --shape 33,17,9 --sample 2 --seed 3 --tolerance 0");
  INFO_RUN(fail);
  CHECK(fail.status == 1);
  CHECK_THAT(fail.out, Catch::Contains("wrong_answer"));
  CHECK_THAT(fail.out, Catch::Contains("0 of 2 passed"));
  CHECK_THAT(fail.out, Catch::Contains("tolerance 0 (given)"));

  CliRun pass = run_cutune("verify gemm --shape 33,17,9 --sample 2 --seed 3");
  INFO_RUN(pass);
  CHECK(pass.status == 0);
  CHECK_THAT(pass.out, Catch::Contains("2 of 2 passed"));
}

TEST_CASE("cli scripts: verify sanitizes every block on request or skips the race check",
          "[cli][emulator]") {
  // A grid of 7x2x1 blocks: more than the default sample, so --all-blocks changes what runs.
  for (const char* flags : {"--all-blocks", "--no-racecheck"}) {
    CliRun r = run_cutune(
        std::string("verify conv2d --shape 1,5,40,40,7,3,3,1,1 --sample 2 --seed 1 ") + flags);
    INFO_RUN(r);
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("2 of 2 passed"));
  }
}

TEST_CASE("cli scripts: verify's tolerance follows the output dtype", "[cli][emulator]") {
  CliRun r = run_cutune(
      "verify gemm_fp16 --template gemm_fp16_nn_out16 --shape 67,45,33 --sample 2 --seed 1");
  INFO_RUN(r);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("by output dtype float16 and reduction length 33"));
  CHECK_THAT(r.out, Catch::Contains("2 of 2 passed"));
  nlohmann::json j =
      nlohmann::json::parse(run_cutune("verify gemm --shape 33,17,9 --sample 1 --json").out);
  CHECK(j["tolerance_source"] == "by output dtype float32 and reduction length 9");
  CHECK(j["tolerance"].get<double>() > 0);
}

TEST_CASE("cli scripts: verify refuses bad tolerances, violating configs, huge shapes", "[cli]") {
  CHECK_ONE_LINE_ERROR(run_cutune("verify gemm --shape 33,17,9 --tolerance -1"), 2,
                       "--tolerance '-1': expected a finite number >= 0");
  CHECK_ONE_LINE_ERROR(run_cutune("verify gemm --shape 33,17,9 --tolerance nan"), 2,
                       "--tolerance 'nan'");
  CHECK_ONE_LINE_ERROR(run_cutune("verify gemm --shape 64,64,64 --config 4049999"), 2,
                       "--config violates a constraint of gemm_nn");
  CHECK_ONE_LINE_ERROR(run_cutune("verify gemm --shape 4096,4096,4096"), 2, "too large to emulate");
  CHECK_ONE_LINE_ERROR(run_cutune("verify conv2d --shape 64,256,224,224,256,3,3 --shrink"), 2,
                       "--shrink knows GEMM shapes only");
}

TEST_CASE("cli scripts: verify --shrink checks a smaller shape with the same tails",
          "[cli][emulator]") {
  CliRun r = run_cutune("verify gemm --shape 4096,4100,1000 --shrink --sample 1 --seed 2");
  INFO_RUN(r);
  CHECK(r.status == 0);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("checking --shape 256,260,488 instead"));
  CHECK_THAT(r.out, Catch::Contains("1 of 1 passed"));
}

// --- item 6: the tuning log -----------------------------------------------------------------

TEST_CASE("cli scripts: an existing log needs --resume, and must be a cutune log", "[cli]") {
  const fs::path dir = scratch();
  const fs::path cache = write_cache(dir, "GPU A");
  const std::string tune = "tune --replay '" + cache.string() + "' --quiet ";
  const fs::path log = dir / "a.jsonl";
  CliRun first = run_cutune(tune + "--trials 10 --log " + log.string());
  INFO_RUN(first);
  REQUIRE(first.status == 0);
  REQUIRE(lines_in(log) == 10);

  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--log " + log.string()), 2,
                       "exists (10 records); add --resume to continue it");
  CHECK(lines_in(log) == 10);

  CliRun resumed = run_cutune(tune + "--trials 15 --resume --log " + log.string());
  INFO_RUN(resumed);
  CHECK(resumed.status == 0);
  CHECK_THAT(resumed.out, Catch::Contains("15 trials (10 resumed, 5 measured)"));
  CHECK(lines_in(log) == 15);

  const fs::path text = dir / "notes.txt";
  std::ofstream(text) << "my notes\n";
  for (const char* resume : {"", "--resume "}) {
    CHECK_ONE_LINE_ERROR(run_cutune(tune + resume + "--log " + text.string()), 2,
                         "is not a cutune tuning log");
  }
  CHECK(slurp(text) == "my notes\n");
  fs::remove_all(dir);
}

TEST_CASE("cli scripts: --resume on a log of another device says what differs", "[cli]") {
  const fs::path dir = scratch();
  const fs::path a = write_cache(dir, "GPU A"), b = write_cache(dir, "GPU B");
  const fs::path log = dir / "a.jsonl";
  REQUIRE(run_cutune("tune --replay " + a.string() + " --quiet --trials 5 --log " + log.string())
              .status == 0);
  CHECK_ONE_LINE_ERROR(
      run_cutune("tune --replay " + b.string() + " --quiet --resume --log " + log.string()), 2,
      "holds no records of this task; its closest task differs in device 'GPU A' (this run: "
      "'GPU B')");
  fs::remove_all(dir);
}

TEST_CASE("cli scripts: a second writer of a log is refused", "[cli]") {
  const fs::path dir = scratch();
  const fs::path cache = write_cache(dir, "GPU A");
  const fs::path log = dir / "a.jsonl";
  REQUIRE(
      run_cutune("tune --replay " + cache.string() + " --quiet --trials 5 --log " + log.string())
          .status == 0);
  const int fd = ::open(log.c_str(), O_RDONLY);  // as a run in progress holds it
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);
  CHECK_ONE_LINE_ERROR(run_cutune("tune --replay " + cache.string() +
                                  " --quiet --trials 10 --resume --log " + log.string()),
                       2, "is being written by another cutune run");
  ::close(fd);
  CHECK(lines_in(log) == 5);
  fs::remove_all(dir);
}

TEST_CASE("cli scripts: with no --log the records go to a file it names", "[cli]") {
  const fs::path dir = scratch();
  const fs::path cache = write_cache(dir, "GPU A");
  CliRun r = run_cutune("tune --replay " + cache.string() + " --quiet --trials 6", dir);
  INFO_RUN(r);
  CHECK(r.status == 0);
  const std::string name = "cutune-toy-64-replay.jsonl";
  CHECK_THAT(r.err, Catch::Contains("records go to " + name));
  CHECK_THAT(r.out, Catch::Contains("log: " + name));
  CHECK(lines_in(dir / name) == 6);
  fs::remove_all(dir);
}

TEST_CASE("cli scripts: Ctrl-C ends the batch in flight, logs it and says how to resume", "[cli]") {
  const fs::path dir = scratch();
  const fs::path cache = write_cache(dir, "GPU A", 64);
  // xgb refitting after every 2 trials keeps the run going for far longer than 5 s (long
  // enough after start-up, on a loaded machine, for the handler to be in place).
  const std::string cmd = "timeout --preserve-status -s INT 5 " + std::string(CUTUNE_BINARY_DIR) +
                          "/src/cli/cutune tune --replay " + cache.string() +
                          " --tuner xgb --batch 2 --trials 4000 --quiet --log " +
                          (dir / "b.jsonl").string() + " >" + (dir / "out").string() + " 2>" +
                          (dir / "err").string();
  const int raw = std::system(cmd.c_str());
  const std::string out = slurp(dir / "out"), err = slurp(dir / "err");
  INFO("stdout:\n" << out << "stderr:\n" << err);
  REQUIRE(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == 130);
  CHECK_THAT(out, Catch::Contains("(interrupted)"));
  CHECK_THAT(err, Catch::Contains("resume with"));
  CHECK_THAT(err, Catch::Contains("--resume"));
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex(R"((\d+) trials \(0 resumed, (\d+) measured\))")));
  CHECK(std::stoi(m[2]) < 4000);
  CHECK(lines_in(dir / "b.jsonl") == std::stoi(m[2]));
  fs::remove_all(dir);
}

// --- item 7: messages and validation ----------------------------------------------------------

TEST_CASE("cli scripts: tune without a GPU points to --replay", "[cli]") {
  // Whether there is a GPU is the driver's answer in this process, not the exit status under test.
  const bool gpu = cutune::driver_api() != nullptr;
  const fs::path dir = scratch();
  const fs::path log = dir / "a.jsonl";
  CliRun r = run_cutune("tune gemm --shape 256,256,256 --trials 5 --quiet --log " + log.string());
  INFO_RUN(r);
  if (gpu) {
    CHECK(r.status == 0);
    CHECK(lines_in(log) > 0);
  } else {
    CHECK_ONE_LINE_ERROR(r, 1, "to try the tuner without a GPU: cutune tune --replay CACHE");
    CHECK_FALSE(fs::exists(log));
  }
  fs::remove_all(dir);
}

TEST_CASE("cli scripts: a template that cannot run on --arch is refused before compiling",
          "[cli]") {
  for (const char* cmd : {"compile gemm_fp16 --shape 64,64,64 --arch sm_75 --sample 1",
                          "verify gemm_bf16 --shape 64,64,64 --arch sm_70 --sample 1",
                          "show gemm_fp16 --shape 64,64,64 --arch sm_75 --config 0"}) {
    CHECK_ONE_LINE_ERROR(run_cutune(cmd), 2, "needs sm_80 or newer");
  }
}

TEST_CASE("cli scripts: files that are not what they should be", "[cli]") {
  const fs::path dir = scratch();
  const fs::path cache = write_cache(dir, "GPU A");
  const std::string tune = "tune --replay " + cache.string() + " --quiet --trials 5 ";
  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--log " + dir.string()), 2, "is a directory");
  CHECK_ONE_LINE_ERROR(run_cutune("tune --replay " + dir.string()), 2,
                       "--replay: " + dir.string() + " is a directory");
  CHECK_ONE_LINE_ERROR(run_cutune("replay --cache " + (dir / "none.json").string()), 2,
                       "--cache: no such file");
  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--log " + (dir / "no/such/folder/x.jsonl").string()), 2,
                       "no such folder");
  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--log /dev/full"), 2, "is a character device");
  CHECK_ONE_LINE_ERROR(run_cutune("export " + cache.string() + " --out " + cache.string()), 2,
                       "exists and is not a folder");
  fs::remove_all(dir);
}

TEST_CASE("cli scripts: negative or NaN numbers are refused", "[cli]") {
  const fs::path dir = scratch();
  const std::string tune = "tune --replay " + write_cache(dir, "GPU A").string() +
                           " --quiet --log " + (dir / "x.jsonl").string() + " ";
  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--seed -1"), 2, "--seed: must be an integer >= 0");
  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--kappa nan"), 2, "--kappa: must be a number >= 0");
  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--kappa -2"), 2, "--kappa: must be a number >= 0");
  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--ensemble 0"), 2, "--ensemble: must be a number in [1, 32]");
  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--trials -5"), 2, "--trials must be >= 1");
  CHECK_ONE_LINE_ERROR(run_cutune(tune + "--epsilon nan"), 2, "--epsilon: must be a number in [0, 1]");
  CHECK_ONE_LINE_ERROR(run_cutune("verify gemm --shape 8,8,8 --seed -3"), 2,
                       "--seed: must be an integer >= 0");
  CHECK_FALSE(fs::exists(dir / "x.jsonl"));
  fs::remove_all(dir);
}

TEST_CASE("cli scripts: a record with a zero time is refused with its line number", "[cli]") {
  const fs::path dir = scratch();
  const fs::path cache = write_cache(dir, "GPU A");
  const fs::path log = dir / "a.jsonl";
  REQUIRE(
      run_cutune("tune --replay " + cache.string() + " --quiet --trials 3 --log " + log.string())
          .status == 0);
  std::string text = slurp(log);
  const size_t second = text.find('\n') + 1;
  const size_t times = text.find("\"times\":[", second) + 9;
  text.replace(times, text.find(']', times) - times, "0.0");
  std::ofstream(log) << text;
  CHECK_ONE_LINE_ERROR(run_cutune("tune --replay " + cache.string() +
                                  " --quiet --trials 5 --resume --log " + log.string()),
                       2, "a.jsonl:2: record: field 'result.times[0]' must be a positive number");
  fs::remove_all(dir);
}

TEST_CASE("cli scripts: --version, replay's progress, help defaults and columns", "[cli]") {
  CliRun v = run_cutune("--version");
  INFO_RUN(v);
  CHECK(v.status == 0);
  CHECK_THAT(v.out, Catch::StartsWith("cutune 0.1"));

  const fs::path dir = scratch();
  const fs::path cache = write_cache(dir, "GPU A");
  CliRun r =
      run_cutune("replay --cache " + cache.string() + " --tuner random --trials 20 --seeds 3");
  INFO_RUN(r);
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("[seed 3/3]"));
  CHECK_THAT(r.err, Catch::Contains("ETA"));
  CHECK_THAT(r.out, Catch::Contains("median optimum/best"));
  CHECK_THAT(r.out, Catch::Contains("batch 32"));  // the default the help shows, below

  // Every default --help shows is the one used: replay's --batch is 32, tune's 64.
  CHECK(std::regex_search(run_cutune("replay --help").out, std::regex(R"(--batch INT=32 )")));
  CHECK(std::regex_search(run_cutune("tune --help").out, std::regex(R"(--batch INT=64 )")));
  fs::remove_all(dir);
}
