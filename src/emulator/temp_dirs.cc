#include "src/emulator/temp_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>

namespace cutune::emu {

namespace {

constexpr int kSlots = 64;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

// The handler reads these without a lock: a slot's path is written before it is marked used.
struct Slot {
  std::atomic<bool> used{false};
  pid_t owner = 0;  // a forked copy of the process must not remove its parent's
  char path[4096];
};
Slot g_slots[kSlots];
std::atomic<bool> g_forgotten{false};
std::mutex g_mutex;
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

// Removes `name` in `dir_fd` and, for a directory, everything below it, with system calls
// only (async-signal-safe): the handler cannot use std::filesystem.
bool remove_at(int dir_fd, const char* name, int depth) {
  if (unlinkat(dir_fd, name, 0) == 0) return true;
  if ((errno != EISDIR && errno != EPERM) || depth > 16) return false;
  int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (long n; (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;) {
      bool removed = false;
      for (long at = 0; at < n;) {
        // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
        unsigned short reclen;
        std::memcpy(&reclen, buf + at + 16, sizeof reclen);
        const char* entry = buf + at + 19;
        if (std::strcmp(entry, ".") != 0 && std::strcmp(entry, "..") != 0) {
          removed = remove_at(fd, entry, depth + 1) || removed;
        }
        at += reclen;
      }
      if (!removed) break;
      // What is removed shifts what the directory lists next: read it again from the start.
      lseek(fd, 0, SEEK_SET);
    }
    close(fd);
  }
  return unlinkat(dir_fd, name, AT_REMOVEDIR) == 0;
}

void remove_registered() {
  if (g_forgotten.load()) return;
  pid_t self = getpid();
  for (Slot& s : g_slots) {
    if (s.used.load() && s.owner == self && s.used.exchange(false)) remove_at(AT_FDCWD, s.path, 0);
  }
}

void on_signal(int sig, siginfo_t* info, void* context) {
  int saved = errno;
  remove_registered();
  errno = saved;
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
    if (kSignals[i] != sig) continue;
    const struct sigaction& prev = g_previous[i];
    if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
      prev.sa_sigaction(sig, info, context);
      return;
    }
    if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
      prev.sa_handler(sig);
      return;
    }
    // The default action: restore it and deliver the signal again (it is blocked while this
    // handler runs, so it arrives as the handler returns).
    sigaction(sig, &prev, nullptr);
    raise(sig);
  }
}

// Installs the handler where another one (or the default) is in place now: a handler set
// after ours (a test framework's, say) may have replaced it since. Under g_mutex.
void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(remove_registered); });
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
    struct sigaction current {};
    sigaction(kSignals[i], nullptr, &current);
    bool ours = (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == on_signal;
    bool ignored = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN;
    if (ours || ignored) continue;
    g_previous[i] = current;
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(kSignals[i], &sa, nullptr);
  }
}

}  // namespace

void register_temp_dir(const std::filesystem::path& dir) {
  std::string abs = std::filesystem::absolute(dir).string();
  if (abs.size() >= sizeof(Slot::path)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  install_handlers();
  for (Slot& s : g_slots) {
    if (s.used.load()) continue;
    std::memcpy(s.path, abs.c_str(), abs.size() + 1);
    s.owner = getpid();
    s.used.store(true);
    return;
  }
}

void unregister_temp_dir(const std::filesystem::path& dir) {
  std::string abs = std::filesystem::absolute(dir).string();
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Slot& s : g_slots) {
    if (s.used.load() && abs == s.path) s.used.store(false);
  }
}

void forget_temp_dirs_in_child() {
  g_forgotten.store(true);
  for (int sig : kSignals) signal(sig, SIG_DFL);
}

}  // namespace cutune::emu
