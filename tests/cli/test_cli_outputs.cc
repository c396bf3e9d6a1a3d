// The files a command writes where a user says (issue 51, item 4): `cache --out`,
// `export --t4 --out` and `tune --log` never replace or write into what is not a regular file
// (a FIFO, a device), never follow a symbolic link, and replace an existing file only with
// --force. Each refusal is one line and exit code 2 and leaves the target as it was.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_run.h"

using cutune::test::CliRun;
using cutune::test::run_cutune;
using cutune::test::slurp;
namespace fs = std::filesystem;

namespace {

// A scratch folder removed with everything in it, and a tuning log of a replayed toy cache.
class Scratch {
 public:
  fs::path operator/(const std::string& name) const { return dir_ / name; }

  // A log of 5 trials of a 4x4 toy cache (tune --replay needs no GPU).
  std::string log() {
    const fs::path cache = dir_ / "toy.json", log = dir_ / "toy.jsonl";
    if (fs::exists(log)) return log.string();
    std::string entries, values = "0,1,2,3";
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        entries += (entries.empty() ? "" : ",") + fmt_entry(a, b);
    std::ofstream(cache) << R"({"device_name":"GPU A","kernel_name":"toy","problem_size":[64],)"
                         << R"("tune_params_keys":["a","b"],"tune_params":{"a":[)" << values
                         << R"(],"b":[)" << values << R"(]},"cache":{)" << entries << "}}";
    const CliRun r = run_cutune("tune --replay " + cache.string() + " --quiet --trials 5 --log " +
                                log.string());
    INFO_RUN(r);
    REQUIRE(r.status == 0);
    return log.string();
  }

 private:
  static std::string fmt_entry(int a, int b) {
    const std::string k = std::to_string(a) + "," + std::to_string(b);
    return "\"" + k + "\":{\"a\":" + std::to_string(a) + ",\"b\":" + std::to_string(b) +
           ",\"time\":" + std::to_string(1.0 + a + 0.5 * b) + "}";
  }
  cutune::test::ProcessTempDir owner_{"cutune-outputs"};
  fs::path dir_ = owner_.path();
};

bool still_fifo(const fs::path& p) { return fs::is_fifo(fs::symlink_status(p)); }

void check_refused(const CliRun& r, const std::string& needle) {
  INFO_RUN(r);
  CHECK(r.status == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::StartsWith("cutune: ") && Catch::Contains(needle));
}

}  // namespace

TEST_CASE("cache --out a FIFO is refused and the FIFO stays a FIFO", "[cli]") {
  Scratch s;
  const std::string log = s.log();
  const fs::path fifo = s / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  for (const std::string extra : {"", " --force"})
    check_refused(run_cutune("cache " + log + " --out " + fifo.string() + extra),
                  "--out " + fifo.string() + " is a FIFO, not a regular file");
  check_refused(run_cutune("export " + log + " --t4 --force --out " + fifo.string()), "is a FIFO");
  CHECK(still_fifo(fifo));
}

TEST_CASE("cache and export --t4 replace an existing file only with --force", "[cli]") {
  Scratch s;
  const std::string log = s.log();
  const fs::path out = s / "out.json";
  std::ofstream(out) << "keep me";
  check_refused(run_cutune("cache " + log + " --out " + out.string()),
                "--out " + out.string() + " exists; pass --force to replace it");
  check_refused(run_cutune("export " + log + " --t4 --out " + out.string()), "pass --force");
  CHECK(slurp(out) == "keep me");

  const CliRun r = run_cutune("cache " + log + " --out " + out.string() + " --force --json");
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["out"] == out.string());
  CHECK(j["log"] == log);
  CHECK(j["records_read"] == 5);
  CHECK(j["written"] == 5);
  CHECK(nlohmann::json::parse(slurp(out)).contains("cache"));

  const CliRun t4 = run_cutune("export " + log + " --t4 --out " + out.string() + " --force");
  INFO_RUN(t4);
  CHECK(t4.status == 0);
  CHECK(nlohmann::json::parse(slurp(out)).contains("schema_version"));
  check_refused(run_cutune("export " + log + " --out " + (s / "folder").string() + " --force"),
                "--force goes with --t4");
  for (const auto& e : fs::directory_iterator(out.parent_path()))
    CHECK_THAT(e.path().filename().string(), !Catch::Contains(".tmp"));
}

TEST_CASE("cache --out a symbolic link names where it points and follows it only as asked",
          "[cli]") {
  Scratch s;
  const std::string log = s.log();
  const fs::path file = s / "real.json", link = s / "link.json";
  std::ofstream(file) << "keep me";
  fs::create_symlink(file, link);
  check_refused(run_cutune("cache " + log + " --out " + link.string()),
                "is a symbolic link to " + file.string());
  CHECK(fs::is_symlink(link));
  const CliRun r = run_cutune("cache " + log + " --out " + link.string() + " --force");
  INFO_RUN(r);
  CHECK(r.status == 0);
  CHECK_FALSE(fs::is_symlink(link));  // the link was replaced, the file it named left alone
  CHECK(slurp(file) == "keep me");
}

TEST_CASE("tune --log a FIFO, a device or a symbolic link is refused before anything runs",
          "[cli]") {
  Scratch s;
  const std::string log = s.log();
  const std::string tune = "tune --replay " + (s / "toy.json").string() + " --quiet --trials 3 ";
  const fs::path fifo = s / "pipe", link = s / "link.jsonl";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  fs::create_symlink(log, link);
  check_refused(run_cutune(tune + "--log " + fifo.string()), "is a FIFO, not a regular file");
  check_refused(run_cutune(tune + "--resume --log " + link.string()),
                "is a symbolic link to " + log + "; name the file itself");
  if (fs::is_character_file("/dev/null")) {
    check_refused(run_cutune(tune + "--log /dev/null"), "is a character device");
    CHECK(fs::is_character_file(fs::symlink_status("/dev/null")));
  }
  CHECK(still_fifo(fifo));
  CHECK(fs::is_symlink(link));
}

TEST_CASE("cache --spec names the spec's KernelName, as Kernel Tuner checks a cache", "[cli]") {
  Scratch s;
  // blur.json under another BenchmarkName: the task is named by it, the kernel is blur_rows.
  const fs::path dir = fs::path(CUTUNE_SOURCE_DIR) / "tests/spec/data/kt_style";
  nlohmann::json spec = nlohmann::json::parse(slurp(dir / "blur.json"));
  spec["General"]["BenchmarkName"] = "blur_bench";
  spec["KernelSpecification"]["BenchmarkName"] = "blur_bench";
  spec["KernelSpecification"]["KernelFile"] = (dir / "blur.cu").string();
  const fs::path renamed = s / "blur_bench.json";
  std::ofstream(renamed) << spec.dump();
  // A Kernel Tuner cache of its space (block_size_x * block_size_y <= 128) to replay.
  // Ordered: the reader wants the keys before the entries, as Kernel Tuner writes them.
  nlohmann::ordered_json cache{{"device_name", "GPU A"},
                       {"kernel_name", "blur_rows"},
                       {"problem_size", spec["KernelSpecification"]["ProblemSize"]},
                       {"tune_params_keys", {"block_size_x", "block_size_y", "tile_size_x"}},
                       {"tune_params",
                        {{"block_size_x", {32, 64}},
                         {"block_size_y", {1, 2, 4}},
                         {"tile_size_x", {1, 2, 3}}}},
                       {"cache", nlohmann::ordered_json::object()}};
  for (int x : {32, 64})
    for (int y : {1, 2, 4})
      for (int t : {1, 2, 3}) {
        if (x * y > 128) continue;
        cache["cache"][fmt::format("{},{},{}", x, y, t)] = {
            {"block_size_x", x}, {"block_size_y", y}, {"tile_size_x", t}, {"time", 1.0 + x + y + t}};
      }
  const fs::path replayed = s / "blur_source.json";
  std::ofstream(replayed) << cache.dump();
  const fs::path log = s / "blur.jsonl", out = s / "blur_cache.json";
  const CliRun tuned = run_cutune("tune --spec " + renamed.string() + " --replay " +
                                  replayed.string() + " --trials 3 --quiet --log " + log.string());
  INFO_RUN(tuned);
  REQUIRE(tuned.status == 0);
  // As a GPU run of the spec logs it: the task named by the BenchmarkName (spec_task_key).
  std::string lines;
  {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      nlohmann::ordered_json r = nlohmann::ordered_json::parse(line);
      r["task"]["op"] = "spec";
      r["task"]["template"] = "blur_bench";
      r["task"]["arch"] = "sm_90";
      r["result"]["timer"] = "cupti";
      lines += r.dump() + "\n";
    }
  }
  std::ofstream(log) << lines;
  const CliRun plain = run_cutune("cache " + log.string() + " --out " + out.string());
  INFO_RUN(plain);
  REQUIRE(plain.status == 0);
  CHECK(nlohmann::json::parse(slurp(out))["kernel_name"] == "blur_bench");
  const CliRun named = run_cutune("cache " + log.string() + " --out " + out.string() +
                                  " --force --spec " + renamed.string());
  INFO_RUN(named);
  REQUIRE(named.status == 0);
  CHECK(nlohmann::json::parse(slurp(out))["kernel_name"] == "blur_rows");
  check_refused(run_cutune("cache " + log.string() + " --out " + out.string() +
                           " --force --spec " + (dir / "blur.json").string()),
                "is the kernel 'blur_rows', the log's task is");
}
