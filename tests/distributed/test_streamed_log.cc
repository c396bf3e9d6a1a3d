// Records reach the log as results arrive, not per batch: a single-process replay run killed
// after a few results keeps exactly those (fewer than a batch), each with its trial number,
// and --resume completes the task to the exact trial count with no configuration twice.
// Needs ../shared/datasets (skipped, exit 77, where it is absent).

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "src/records/tuning_log.h"

extern char** environ;

using namespace cutune;
namespace fs = std::filesystem;

namespace {

const std::string kCache = CUTUNE_SOURCE_DIR "/../shared/datasets/gemm/RTX_3090.json.gz";
const std::string kBinary = CUTUNE_BINARY_DIR "/src/cli/cutune";

int count_lines(const fs::path& p) {
  std::ifstream in(p);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int wait_exit(pid_t pid) {
  int raw = 0;
  waitpid(pid, &raw, 0);
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

}  // namespace

TEST_CASE("a killed run keeps every result that arrived and resumes to the exact count",
          "[distributed]") {
  if (!fs::exists(kCache)) {
    std::cout << "skipped: dataset absent: " << kCache << std::endl;
    std::exit(77);
  }
  std::string templ = (fs::temp_directory_path() / "cutune-stream-test-XXXXXX").string();
  const fs::path dir = mkdtemp(templ.data());
  const fs::path log = dir / "killed.jsonl";
  const std::vector<std::string> common = {
      kBinary, "tune",     "--quiet", "--tuner",  "random", "--batch", "32",        "--seed",
      "3",     "--trials", "64",      "--replay", kCache,   "--log",   log.string()};

  // 40 ms per answer: a batch of 32 takes 1.3 s, so a kill after 5 results lands mid-batch.
  std::vector<std::string> first = common;
  first.insert(first.end(), {"--replay-cost-ms", "40"});
  const pid_t pid = spawn(first);
  REQUIRE(pid > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count_lines(log) < 5 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  kill(pid, SIGKILL);
  CHECK(wait_exit(pid) == -1);

  const std::vector<Record> survived = read_log(log).records;
  INFO("records after the kill: " << survived.size());
  // Appending per batch would leave 0 or 32 records.
  CHECK(survived.size() >= 5);
  CHECK(survived.size() < 32);
  std::set<int64_t> trials;
  for (const Record& r : survived) trials.insert(r.trial);
  CHECK(trials.size() == survived.size());
  CHECK(*trials.begin() == 0);
  CHECK(*trials.rbegin() < 32);

  std::vector<std::string> second = common;
  second.push_back("--resume");
  const pid_t resumed = spawn(second);
  REQUIRE(resumed > 0);
  REQUIRE(wait_exit(resumed) == 0);
  const std::vector<Record> all = read_log(log).records;
  CHECK(all.size() == 64);
  std::set<uint64_t> configs;
  std::set<int64_t> numbers;
  for (const Record& r : all) {
    configs.insert(r.config_index);
    numbers.insert(r.trial);
  }
  CHECK(configs.size() == all.size());  // no configuration measured twice
  CHECK(numbers.size() == all.size());  // every trial number once
  fs::remove_all(dir);
}
