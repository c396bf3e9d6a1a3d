#include "src/emulator/source_lines.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace cutune::emu {

namespace {

namespace fs = std::filesystem;

// Runs addr2line on `object` for `offsets`; returns its output, or "" if it cannot run.
std::string run_addr2line(const fs::path& object, const std::vector<std::string>& offsets) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  std::vector<std::string> argv = {"addr2line", "-e", object.string(), "-i", "-a"};
  argv.insert(argv.end(), offsets.begin(), offsets.end());
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  if (err == 0) {
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
      if (n < 0) {
        if (errno == EINTR) continue;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close(fds[0]);
  return out;
}

}  // namespace

std::string resolve_source_lines(const std::string& message, const fs::path& object) {
  const std::string open = "@pc:";
  std::vector<std::string> offsets;
  for (size_t at = message.find(open); at != std::string::npos; at = message.find(open, at + 1)) {
    size_t close = message.find('@', at + open.size());
    if (close == std::string::npos) break;
    offsets.push_back("0x" + message.substr(at + open.size(), close - at - open.size()));
  }
  if (offsets.empty()) return message;
  // With -i each address is followed by its inline chain, innermost first; the line wanted is
  // the first frame in the kernel's own file.
  std::map<uint64_t, std::string> lines;
  std::istringstream out(run_addr2line(object, offsets));
  uint64_t current = 0;
  bool have = false;
  for (std::string l; std::getline(out, l);) {
    if (l.rfind("0x", 0) == 0) {
      current = std::strtoull(l.c_str(), nullptr, 16);
      have = false;
      continue;
    }
    if (have) continue;
    size_t colon = l.rfind(':');
    if (colon == std::string::npos) continue;
    std::string file = l.substr(0, colon);
    int line = std::atoi(l.c_str() + colon + 1);
    if (line <= 0) continue;
    bool kernel = file.size() >= 9 && file.compare(file.size() - 9, 9, "kernel.cu") == 0;
    if (kernel || lines.count(current) == 0) lines[current] = fmt::format("line {}", line);
    have = kernel;
  }
  std::string result;
  size_t copied = 0;
  for (size_t at = message.find(open); at != std::string::npos; at = message.find(open, copied)) {
    size_t close = message.find('@', at + open.size());
    if (close == std::string::npos) break;
    result.append(message, copied, at - copied);
    uint64_t pc = std::strtoull(message.c_str() + at + open.size(), nullptr, 16);
    auto it = lines.find(pc);
    result += it != lines.end() ? it->second : fmt::format("an unknown line (offset {:#x})", pc);
    copied = close + 1;
  }
  result.append(message, copied, std::string::npos);
  return result;
}

}  // namespace cutune::emu
