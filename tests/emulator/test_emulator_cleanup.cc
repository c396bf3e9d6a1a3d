// The emulator leaves nothing behind when its process is ended: the forked child that runs a
// kernel dies with its parent (PR_SET_PDEATHSIG), and the temporary work directory goes on
// SIGTERM / SIGINT too (temp_dirs.h).

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "src/emulator/emulator.h"
#include "tests/emulator/emulator_fixtures.h"

namespace cutune::emu {
namespace {

namespace fs = std::filesystem;
using testing::buffer_param;
using testing::make_source;

// The process `pid`'s parent and state letter, from /proc; false when it no longer exists.
bool process_info(pid_t pid, pid_t& parent, char& state) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return false;
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 > stat.size()) return false;
  state = stat[close + 2];
  parent = static_cast<pid_t>(std::stol(stat.substr(close + 4)));
  return true;
}

bool alive(pid_t pid) {
  pid_t parent;
  char state;
  return process_info(pid, parent, state) && state != 'Z' && state != 'X';
}

// A child of `parent` that runs this very executable (the emulator's fork, not the compiler).
pid_t forked_child_of(pid_t parent) {
  fs::path self = fs::read_symlink("/proc/self/exe");
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    pid_t p;
    char state;
    std::error_code ec;
    if (!process_info(pid, p, state) || p != parent) continue;
    if (fs::read_symlink(e.path() / "exe", ec) == self && !ec) return pid;
  }
  return 0;
}

template <class F>
bool within_seconds(double seconds, F done) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

struct Helper {
  pid_t pid = 0;
  fs::path work_dir;
  pid_t emulator_child = 0;
};

// Forks a process that makes an Emulator (with its own temporary work dir), tells us the dir,
// and runs a kernel that spins for a minute. Returns once the emulator's child is running.
Helper start_spinning_helper() {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  Helper h;
  h.pid = fork();
  REQUIRE(h.pid >= 0);
  if (h.pid == 0) {
    close(fds[0]);
    // Quiet: the test framework's own handler reports the signal as a failure in here.
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    EmulatorOptions options;
    options.timeout_seconds = 60;
    options.host_threads = 1;
    Emulator emu(options);
    std::string dir = emu.work_dir().string() + "\n";
    if (write(fds[1], dir.data(), dir.size()) != static_cast<ssize_t>(dir.size())) _exit(1);
    close(fds[1]);
    CudaSource src =
        make_source("spin", R"(extern "C" __global__ void spin(float* __restrict__ out) {
  volatile int forever = 1;
  while (forever) {
  }
  out[threadIdx.x] = 1.0f;
}
)",
                    {buffer_param("out", 32)}, Dim3{1, 1, 1}, Dim3{32, 1, 1});
    std::vector<HostBuffer> bufs = {HostBuffer::zeros(ir::Type::f32(), 32)};
    emu.run(src, bufs);
    _exit(0);
  }
  close(fds[1]);
  std::string dir;
  char c;
  while (read(fds[0], &c, 1) == 1 && c != '\n') dir += c;
  close(fds[0]);
  h.work_dir = dir;
  REQUIRE(!dir.empty());
  REQUIRE(fs::exists(h.work_dir));
  // The compiled object first (a compiler just spawned also runs this executable until its
  // exec), then the fork that runs the kernel.
  auto compiled = [&] {
    for (const fs::directory_entry& e : fs::directory_iterator(h.work_dir)) {
      if (e.path().extension() == ".so") return true;
    }
    return false;
  };
  REQUIRE(within_seconds(30, compiled));
  REQUIRE(within_seconds(30, [&] { return (h.emulator_child = forked_child_of(h.pid)) != 0; }));
  return h;
}

TEST_CASE("SIGTERM to the caller removes the work dir and ends the emulator's child",
          "[emulator]") {
  Helper h = start_spinning_helper();
  REQUIRE(kill(h.pid, SIGTERM) == 0);
  int status = 0;
  REQUIRE(waitpid(h.pid, &status, 0) == h.pid);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGTERM);  // the default action still happens
  REQUIRE_FALSE(fs::exists(h.work_dir));
  REQUIRE(within_seconds(5, [&] { return !alive(h.emulator_child); }));
}

TEST_CASE("SIGKILL to the caller still ends the emulator's child", "[emulator]") {
  Helper h = start_spinning_helper();
  REQUIRE(kill(h.pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(h.pid, &status, 0) == h.pid);
  REQUIRE(within_seconds(5, [&] { return !alive(h.emulator_child); }));
  std::error_code ignored;
  fs::remove_all(h.work_dir, ignored);  // SIGKILL cannot be caught: nothing removed it
}

TEST_CASE("an Emulator removes its own work dir when destroyed", "[emulator]") {
  fs::path dir;
  {
    Emulator emu;
    dir = emu.work_dir();
    REQUIRE(fs::exists(dir));
  }
  REQUIRE_FALSE(fs::exists(dir));
}

}  // namespace
}  // namespace cutune::emu
