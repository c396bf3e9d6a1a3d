#pragma once
// Small records and scratch folders shared by the records tests.

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/records/record.h"

namespace cutune::testing {

inline TaskKey gemm_task(int64_t n = 1024) {
  return TaskKey{.op = "gemm",
                 .shape = {n, n, n},
                 .dtype = "float32",
                 .target_arch = "sm_90",
                 .device_name = "NVIDIA H200",
                 .template_name = "gemm_nn"};
}

inline Record make_record(const TaskKey& task, uint64_t index, std::vector<double> times,
                          MeasureStatus status = MeasureStatus::ok,
                          std::string timestamp = "2026-11-30T09:00:00Z") {
  Record r;
  r.task = task;
  r.config_index = index;
  r.knobs = {{"tile_m", {2, 4, 8}}, {"vec", 4}};
  r.result.status = status;
  r.result.times_s = std::move(times);
  r.result.compile_s = 0.25;
  r.result.timer = status == MeasureStatus::ok ? TimerKind::cupti : TimerKind::none;
  if (status != MeasureStatus::ok) r.result.error = std::string(to_string(status)) + ": boom";
  r.timestamp = std::move(timestamp);
  return r;
}

// A fresh empty folder under the build tree, removed at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::path(CUTUNE_BINARY_DIR) / "tmp" /
            ("records-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

}  // namespace cutune::testing
