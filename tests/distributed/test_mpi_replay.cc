// Tuning a replay suite of the shared caches under mpirun: the records do not depend on the
// number of ranks, and a job that loses a rank is continued by --resume with another number of
// ranks to the exact trial count. Needs MPI (this file is built only with it) and
// ../shared/datasets (each case exits 77, skipped, where it is absent).

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <tuple>
#include <string>

#include "src/records/tuning_log.h"
#include "src/runtime/driver_api.h"

using namespace cutune;
namespace fs = std::filesystem;

namespace {

const std::string kData = CUTUNE_SOURCE_DIR "/../shared/datasets";
const std::vector<std::string> kCaches = {
    "gemm/RTX_3090.json.gz", "convolution_old/RTX_3090.json.gz", "dedispersion_milo/A4000.json.gz"};

std::string suite_args(int trials) {
  for (const std::string& c : kCaches) {
    if (!fs::exists(kData + "/" + c)) {
      std::cout << "skipped: dataset absent: " << kData << "/" << c << std::endl;
      std::exit(77);
    }
  }
  std::string args = "tune --quiet --tuner xgb --batch 16 --seed 5 --trials " +
                     std::to_string(trials) + " --replay";
  for (const std::string& c : kCaches) args += " " + kData + "/" + c;
  return args;
}

fs::path scratch(const std::string& name) {
  static const fs::path dir = [] {
    std::string templ = (fs::temp_directory_path() / "cutune-mpi-test-XXXXXX").string();
    return fs::path(mkdtemp(templ.data()));
  }();
  fs::remove(dir / name);
  return dir / name;
}

// Exit status of a shell command (-1 when it did not exit normally).
int shell(const std::string& command) {
  INFO("$ " << command);
  const int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

std::string cutune_binary() { return CUTUNE_BINARY_DIR "/src/cli/cutune"; }

std::string mpirun(int ranks) {
  // Ranks sleep more than they compute, so oversubscribing two cores is fine; root in CI.
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
         "OMPI_MCA_rmaps_base_oversubscribe=1 " +
         std::string(MPIEXEC) + " -n " + std::to_string(ranks) + " --oversubscribe " +
         cutune_binary();
}

// Each task's records in trial order (the log holds them as they arrived), without what
// legitimately differs between runs: the timestamp and which rank measured (the result's
// details.gpu.device).
std::map<TaskKey, std::vector<Record>> comparable(const fs::path& log) {
  std::vector<Record> records = read_log(log).records;
  for (Record& r : records) {
    r.timestamp.clear();
    r.result.details.gpu.device.reset();
  }
  std::map<TaskKey, std::vector<Record>> by_task = group_by_task(records);
  for (auto& [task, rs] : by_task)
    std::stable_sort(rs.begin(), rs.end(),
                     [](const Record& a, const Record& b) { return a.trial < b.trial; });
  return by_task;
}

}  // namespace

TEST_CASE("mpirun -n 3 gives exactly the records of a single-process run", "[mpi]") {
  const std::string args = suite_args(48);
  const fs::path single = scratch("single.jsonl"), three = scratch("three.jsonl");
  REQUIRE(shell(cutune_binary() + " " + args + " --log " + single.string() + " >/dev/null") == 0);
  // Rank 0 only searches, so ranks 1 and 2 measure everything (with rank 0 measuring too, a
  // loaded machine may let it answer all before the others have started).
  REQUIRE(shell(mpirun(3) + " " + args + " --coordinator-only --log " + three.string() +
                " >/dev/null") == 0);
  const auto a = comparable(single), b = comparable(three);
  REQUIRE(a.size() == kCaches.size());
  REQUIRE(b.size() == a.size());
  for (const auto& [task, records] : a) {
    INFO(task.to_string());
    REQUIRE(b.count(task) == 1);
    CHECK(records.size() == 48);
    for (size_t i = 0; i < records.size(); ++i) CHECK(records[i].trial == int64_t(i));
    CHECK(b.at(task) == records);  // configurations, order of proposal and results
  }
  // Both measuring ranks took part, and each record names its rank.
  std::set<std::string> devices;
  for (const Record& r : read_log(three).records)
    devices.insert(std::get<std::string>(r.result.details.gpu.device.value()));
  CHECK(devices == std::set<std::string>{"1", "2"});
}

TEST_CASE("a killed rank aborts the job and --resume with 2 ranks completes it", "[mpi]") {
  // Answers that take 10 ms spread the work over every rank (free answers would mostly be taken
  // by rank 0's own lane).
  const std::string args = suite_args(64) + " --replay-cost-ms 10";
  const fs::path log = scratch("resumed.jsonl");
  // Rank 1 dies after measuring 5 candidates: mpirun takes the job down.
  const int aborted = shell("CUTUNE_TEST_KILL_RANK=1:5 " + mpirun(3) + " " + args + " --log " +
                            log.string() + " >/dev/null 2>&1");
  CHECK(aborted != 0);
  const size_t survived = fs::exists(log) ? read_log(log).records.size() : 0;
  CHECK(survived < 64 * kCaches.size());

  REQUIRE(shell(mpirun(2) + " " + args + " --resume --log " + log.string() + " >/dev/null") == 0);
  const std::vector<Record> records = read_log(log).records;
  const auto by_task = group_by_task(records);
  REQUIRE(by_task.size() == kCaches.size());
  for (const auto& [task, rs] : by_task) {
    INFO(task.to_string());
    CHECK(rs.size() == 64);  // the exact trial count
    std::set<uint64_t> configs;
    for (const Record& r : rs) configs.insert(r.config_index);
    CHECK(configs.size() == rs.size());  // no configuration measured twice
  }
}

namespace {

// Paths of shared caches (exits 77, skipped, where one is absent).
std::string caches(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& c : names) {
    if (!fs::exists(kData + "/" + c)) {
      std::cout << "skipped: dataset absent: " << kData << "/" << c << std::endl;
      std::exit(77);
    }
    out += " " + kData + "/" + c;
  }
  return out;
}

// Standard output of a shell command (its exit status in `status`).
std::string output_of(const std::string& command, int* status) {
  INFO("$ " << command);
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int raw = pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

}  // namespace

TEST_CASE("transfer between the tasks of a suite: the same records on 1 and 3 ranks",
          "[mpi]") {
  // Two gemm caches (one space, two GPUs) and a convolution: the second gemm task learns from
  // the first, the convolution from none.
  const std::string args = "tune --quiet --json --tuner xgb --batch 16 --seed 5 --trials 40 "
                           "--replay" +
                           caches({"gemm/RTX_3090.json.gz", "gemm/RTX_2080_Ti.json.gz",
                                   "convolution_old/RTX_3090.json.gz"});
  const fs::path single = scratch("transfer1.jsonl"), three = scratch("transfer3.jsonl"),
                 none = scratch("notransfer.jsonl");
  int status = 0;
  const nlohmann::json summary =
      nlohmann::json::parse(output_of(cutune_binary() + " " + args + " --log " +
                                          single.string(), &status));
  REQUIRE(status == 0);
  std::vector<int> learnt;
  for (const nlohmann::json& t : summary.at("tasks")) learnt.push_back(t.at("transfer_tasks"));
  CHECK(learnt == std::vector<int>{0, 1, 0});

  REQUIRE(shell(mpirun(3) + " " + args + " --coordinator-only --log " + three.string() +
                " >/dev/null") == 0);
  const auto a = comparable(single), b = comparable(three);
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  for (const auto& [task, records] : a) {
    INFO(task.to_string());
    CHECK(records.size() == 40);
    CHECK(b.at(task) == records);
  }

  // Without transfer the first gemm task and the convolution are the same, the learning task
  // is not: the transfer model changed what it proposed.
  REQUIRE(shell(cutune_binary() + " " + args + " --no-transfer --log " + none.string() +
                " >/dev/null") == 0);
  const auto c = comparable(none);
  int same = 0;
  for (const auto& [task, records] : a) same += c.at(task) == records;
  CHECK(same == 2);
}

TEST_CASE("tune OP --device emulator under mpirun -n 2: every rank builds and measures",
          "[mpi]") {
  // Random search, whose proposals do not depend on the (emulator wall) times: the runs must
  // propose and check the same configurations with the same outcomes.
  const std::string args =
      " tune gemm --shape 32,32,16 --device emulator --trials 16 --batch 8 --tuner random "
      "--seed 3 --quiet --log ";
  const fs::path single = scratch("emu1.jsonl"), two = scratch("emu2.jsonl");
  REQUIRE(shell(cutune_binary() + args + single.string() + " >/dev/null 2>&1") == 0);
  REQUIRE(shell(mpirun(2) + args + two.string() + " >/dev/null 2>&1") == 0);
  const auto outcomes = [](const fs::path& log, std::set<std::string>* devices) {
    std::vector<std::tuple<int64_t, uint64_t, std::string, TaskKey>> out;
    for (const Record& r : read_log(log).records) {
      out.emplace_back(r.trial, r.config_index, std::string(to_string(r.result.status)), r.task);
      if (devices && r.result.details.gpu.device)
        devices->insert(std::get<std::string>(*r.result.details.gpu.device));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  std::set<std::string> devices;
  const auto a = outcomes(single, nullptr), b = outcomes(two, &devices);
  REQUIRE(a.size() == 16);
  CHECK(a == b);
  CHECK(devices == std::set<std::string>{"0", "1"});  // both ranks measured
}

TEST_CASE("tune OP on the GPU under mpirun without a GPU refuses with one line", "[mpi]") {
  if (driver_api() != nullptr) {
    std::cout << "skipped: a CUDA device is present; the no-device path is not reachable"
              << std::endl;
    std::exit(77);
  }
  const fs::path log = scratch("nogpu.jsonl");
  int status = 0;
  const std::string err =
      output_of("timeout 60 env " + mpirun(2) + " tune gemm --shape 32,32,16 --trials 4 --log " +
                    log.string() + " 2>&1 >/dev/null | grep '^cutune:'",
                &status);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  CHECK(err.find("no CUDA device") != std::string::npos);
  CHECK_FALSE(fs::exists(log));
}

TEST_CASE("tune-suite of two small layers --device emulator under mpirun -n 2", "[mpi]") {
  const std::string args =
      " tune-suite mobilenet --layers D8,D9 --device emulator --trials 6 --batch 3 --quiet ";
  // Random search: the same configurations and outcomes on one process and on two ranks.
  const fs::path single = scratch("suite1.jsonl"), two = scratch("suite2.jsonl"),
                 learnt = scratch("suite_xgb.jsonl");
  const std::string random = args + "--tuner random --seed 2 --log ";
  REQUIRE(shell(cutune_binary() + random + single.string() + " >/dev/null 2>&1") == 0);
  REQUIRE(shell(mpirun(2) + random + two.string() + " >/dev/null 2>&1") == 0);
  const auto outcomes = [](const fs::path& log) {
    std::vector<std::tuple<TaskKey, int64_t, uint64_t, std::string>> out;
    for (const Record& r : read_log(log).records)
      out.emplace_back(r.task, r.trial, r.config_index, std::string(to_string(r.result.status)));
    std::sort(out.begin(), out.end());
    return out;
  };
  const auto a = outcomes(single);
  REQUIRE(a.size() == 12);
  CHECK(outcomes(two) == a);

  // xgb: the second layer (same template) learns from the first.
  int status = 0;
  const std::string out = output_of(
      mpirun(2) + args + "--tuner xgb --json --log " + learnt.string() + " 2>/dev/null", &status);
  REQUIRE(status == 0);
  const nlohmann::json j = nlohmann::json::parse(out);
  CHECK(j.at("ranks") == 2);
  REQUIRE(j.at("layers").size() == 2);
  CHECK(j["layers"][0]["transfer_tasks"] == 0);
  CHECK(j["layers"][1]["transfer_tasks"] == 1);
  CHECK(j["layers"][1]["trials"] == 6);
}

TEST_CASE("noisy replays give the same records on 1 and 3 ranks", "[mpi]") {
  // Each answer is drawn from (seed, task, configuration, repetition), not from the measuring
  // rank's stream.
  const std::string args = suite_args(32) + " --noise";
  const fs::path single = scratch("noisy1.jsonl"), three = scratch("noisy3.jsonl"),
                 quiet = scratch("quiet.jsonl");
  REQUIRE(shell(cutune_binary() + " " + args + " --log " + single.string() + " >/dev/null") == 0);
  REQUIRE(shell(mpirun(3) + " " + args + " --coordinator-only --log " + three.string() +
                " >/dev/null") == 0);
  const auto a = comparable(single), b = comparable(three);
  REQUIRE(a.size() == kCaches.size());
  for (const auto& [task, records] : a) {
    INFO(task.to_string());
    CHECK(records.size() == 32);
    CHECK(b.at(task) == records);
  }
  // And the noise is there: without it, some answers differ.
  REQUIRE(shell(cutune_binary() + " " + suite_args(32) + " --log " + quiet.string() +
                " >/dev/null") == 0);
  CHECK(comparable(quiet) != a);
}

TEST_CASE("a rank whose task differs from rank 0's refuses with one line", "[mpi]") {
  // Two command lines in one job (MPMD): rank 1 was given another shape.
  const std::string tail = " --device emulator --trials 4 --batch 4 --tuner random --quiet --log ";
  const fs::path log = scratch("mismatch.jsonl");
  const std::string job = mpirun(1) + " tune gemm --shape 32,32,16 --coordinator-only" + tail +
                          log.string() + " : -n 1 " + cutune_binary() +
                          " tune gemm --shape 32,32,32" + tail + log.string();
  int status = 0;
  const std::string err =
      output_of("timeout 60 env " + job + " 2>&1 >/dev/null | grep '^cutune:'", &status);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  CHECK(err.find("rank 1: task 0 has shape [32,32,32] here but [32,32,16] on rank 0") !=
        std::string::npos);
}
