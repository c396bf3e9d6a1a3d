#include "src/emulator/kernel_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <new>
#include <thread>

#include <fmt/format.h>

#include "src/emulator/block_runner.h"
#include "src/emulator/cluster_runner.h"
#include "src/emulator/temp_dirs.h"

namespace cutune::emu {

namespace {

constexpr int kReportedExit = 3;
constexpr size_t kAltStackBytes = 64 * 1024;

// Lives in a shared page: the child fills it, the parent reads it after the child is gone.
struct Report {
  std::atomic<int> claimed;
  std::atomic<uint64_t> uninitialised_reads;  // the tracked rule's notes (EmuResult)
  EmuStatus status;
  char message[4096];
};

// What the child's signal handlers need; set once in the child before any thread starts.
Report* g_report = nullptr;
const GuardedBuffers* g_buffers = nullptr;
const char* g_kernel_name = "";

// Builds a message without allocating, for signal handlers.
class FixedText {
 public:
  FixedText& operator<<(std::string_view s) {
    for (char c : s) {
      if (size_ + 1 < sizeof(text_)) text_[size_++] = c;
    }
    text_[size_] = '\0';
    return *this;
  }
  FixedText& operator<<(int64_t v) {
    char digits[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) *this << "-";
    while (n > 0) *this << std::string_view(&digits[--n], 1);
    return *this;
  }
  FixedText& hex(uintptr_t v) {
    *this << "0x";
    for (int shift = 60; shift >= 0; shift -= 4) {
      *this << std::string_view(&"0123456789abcdef"[(v >> shift) & 0xf], 1);
    }
    return *this;
  }
  const char* c_str() const { return text_; }

 private:
  char text_[1024] = {};
  size_t size_ = 0;
};

FixedText& operator<<(FixedText& t, const cutune_emu_abi::Dim3& d) {
  return t << "(" << int64_t{d.x} << "," << int64_t{d.y} << "," << int64_t{d.z} << ")";
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

// The first reporter wins; the others wait for its _exit to end them.
[[noreturn]] void report_and_exit(EmuStatus status, const char* message) {
  if (g_report->claimed.exchange(1) == 0) {
    g_report->status = status;
    size_t n = std::min(std::strlen(message), sizeof(g_report->message) - 1);
    std::memcpy(g_report->message, message, n);
    g_report->message[n] = '\0';
    _exit(kReportedExit);
  }
  for (;;) pause();
}

// What the faulting instruction did, as far as the platform says.
const char* access_kind(void* context) {
#if defined(__x86_64__)
  // Bit 1 of the page-fault error code: the access was a write.
  bool write = (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
  return write ? "write to " : "read of ";
#else
  (void)context;
  return "access to ";
#endif
}

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  FixedText t;
  const cutune_emu_abi::Thread* thread = current_emulated_thread();
  auto where = [&] {
    if (thread != nullptr)
      t << " by block " << thread->block_idx << " thread " << thread->thread_idx;
  };
  if ((sig == SIGSEGV || sig == SIGBUS) && g_buffers != nullptr) {
    if (auto at = g_buffers->locate(info->si_addr)) {
      const std::string& name = g_buffers->name(at->buffer);
      int64_t elements = g_buffers->elements(at->buffer);
      t << g_kernel_name;
      if (at->element >= 0 && at->element < elements) {
        t << ": write to the read-only buffer " << name << " at element " << at->element;
      } else {
        t << ": out-of-bounds " << access_kind(context) << name << "[" << at->element << "] ("
          << name << " has " << elements << " elements)";
      }
      where();
      report_and_exit(EmuStatus::out_of_bounds, t.c_str());
    }
  }
  t << g_kernel_name << ": " << signal_name(sig);
  if (sig == SIGSEGV || sig == SIGBUS) {
    t << " at address ";
    t.hex(reinterpret_cast<uintptr_t>(info->si_addr));
  }
  where();
  report_and_exit(EmuStatus::crashed, t.c_str());
}

// Per thread: a fault on a fiber stack that overflowed still needs a stack to run on.
// The stack is never freed: the child ends with _exit.
void use_alternate_signal_stack() {
  stack_t ss{};
  ss.ss_sp = ::operator new(kAltStackBytes);
  ss.ss_size = kAltStackBytes;
  sigaltstack(&ss, nullptr);
}

void install_fault_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigaction(sig, &sa, nullptr);
}

// Runs, from `kernel`, the blocks `order(i)` for the i < count taken from `next`.
template <class Order>
void run_blocks(const KernelLaunch& launch, const LoadedKernel& kernel, bool sanitize, Order order,
                uint64_t count, std::atomic<uint64_t>& next) {
  use_alternate_signal_stack();
  const Dim3& g = launch.launch.grid;
  if (const unsigned cluster = launch.launch.cluster_x; cluster > 1) {
    // A cluster at a time, from its block of rank 0 (the blocks handed out are whole
    // clusters: emulator.cc samples them so).
    ClusterRunner runner(cluster, launch.launch, kernel.thread_main(), launch.args.data(),
                         kernel.tls_touch(), launch.poison_shared, sanitize);
    for (uint64_t n; (n = next.fetch_add(1)) < count;) {
      uint64_t i = order(n);
      cutune_emu_abi::Dim3 block{static_cast<unsigned>(i % g.x),
                                 static_cast<unsigned>(i / g.x % g.y),
                                 static_cast<unsigned>(i / (uint64_t{g.x} * g.y))};
      if (block.x % cluster != 0) continue;
      BlockRunner::Failure failure = runner.run(block);
      if (failure.status != EmuStatus::ok) {
        report_and_exit(failure.status,
                        fmt::format("{}: {}", launch.kernel_name, failure.message).c_str());
      }
      g_report->uninitialised_reads += runner.noted_uninitialised_reads();
    }
    return;
  }
  BlockRunner runner(launch.launch, kernel.thread_main(), launch.args.data(), kernel.tls_touch(),
                     launch.poison_shared, sanitize);
  for (uint64_t n; (n = next.fetch_add(1)) < count;) {
    uint64_t i = order(n);
    cutune_emu_abi::Dim3 block{static_cast<unsigned>(i % g.x), static_cast<unsigned>(i / g.x % g.y),
                               static_cast<unsigned>(i / (uint64_t{g.x} * g.y))};
    BlockRunner::Failure failure = runner.run(block);
    if (failure.status != EmuStatus::ok) {
      report_and_exit(failure.status,
                      fmt::format("{}: {}", launch.kernel_name, failure.message).c_str());
    }
    g_report->uninitialised_reads += runner.noted_uninitialised_reads();
  }
}

// Runs `count` blocks on up to host_threads threads and waits for all of them.
template <class Order>
void run_phase(const KernelLaunch& launch, const LoadedKernel& kernel, bool sanitize, Order order,
               uint64_t count) {
  std::atomic<uint64_t> next{0};
  int threads = static_cast<int>(std::min<uint64_t>(std::max(launch.host_threads, 1), count));
  std::vector<std::thread> workers;
  for (int i = 1; i < threads; ++i) {
    workers.emplace_back([&] { run_blocks(launch, kernel, sanitize, order, count, next); });
  }
  run_blocks(launch, kernel, sanitize, order, count, next);
  for (std::thread& w : workers) w.join();
}

[[noreturn]] void child_main(const KernelLaunch& launch, Report* report, pid_t parent) {
  // The child dies with the thread that forked it (which waits for it), so that a parent
  // killed by any signal leaves no emulator running; and a parent already gone ends it now.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(kReportedExit + 1);
  forget_temp_dirs_in_child();
  g_report = report;
  g_buffers = launch.buffers;
  g_kernel_name = launch.kernel_name.c_str();
  try {
    install_fault_handlers();
    launch.buffers->protect_read_only();
    if (launch.sanitize) {
      SanitizerRun run = launch.sanitizer;
      run.report = &report_and_exit;
      begin_sanitized_run(run);
    }
    const uint64_t blocks = launch.launch.grid.volume();
    if (launch.sanitize && launch.plain_kernel != nullptr) {
      const std::vector<uint64_t>& checked = launch.checked_blocks;
      run_phase(
          launch, *launch.kernel, true, [&](uint64_t n) { return checked[n]; }, checked.size());
      // Then the others, in order.
      std::vector<uint64_t> unchecked;
      unchecked.reserve(blocks - checked.size());
      for (uint64_t i = 0, c = 0; i < blocks; ++i) {
        if (c < checked.size() && checked[c] == i) {
          ++c;
        } else {
          unchecked.push_back(i);
        }
      }
      if (launch.sanitizer.racecheck) begin_unchecked_blocks();
      run_phase(
          launch, *launch.plain_kernel, false, [&](uint64_t n) { return unchecked[n]; },
          unchecked.size());
      if (launch.sanitizer.racecheck) end_unchecked_blocks();
    } else {
      run_phase(
          launch, *launch.kernel, launch.sanitize, [](uint64_t n) { return n; }, blocks);
    }
  } catch (const std::exception& e) {
    report_and_exit(
        EmuStatus::crashed,
        fmt::format("{}: the emulator failed: {}", launch.kernel_name, e.what()).c_str());
  }
  _exit(0);
}

}  // namespace

EmuResult run_in_child_process(const KernelLaunch& launch) {
  EmuResult result;
  void* page =
      mmap(nullptr, sizeof(Report), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw std::bad_alloc();
  auto* report = new (page) Report{};

  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    munmap(page, sizeof(Report));
    throw std::runtime_error(fmt::format("emulator: fork failed: {}", std::strerror(errno)));
  }
  if (pid == 0) child_main(launch, report, parent);

  int status = 0;
  bool timed_out = false;
  auto nap = std::chrono::microseconds(20);
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (elapsed() > launch.timeout_seconds) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(2000));
  }
  result.run_seconds = elapsed();

  if (timed_out) {
    result.status = EmuStatus::timeout;
    result.message =
        fmt::format("{}: did not finish within {} s", launch.kernel_name, launch.timeout_seconds);
  } else if (report->claimed.load() != 0) {
    result.status = report->status;
    result.message = report->message;
  } else if (WIFSIGNALED(status)) {
    result.status = EmuStatus::crashed;
    result.message = fmt::format("{}: the emulator's process died of {}", launch.kernel_name,
                                 signal_name(WTERMSIG(status)));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    result.status = EmuStatus::crashed;
    result.message = fmt::format("{}: the emulator's process exited with status {}",
                                 launch.kernel_name, WEXITSTATUS(status));
  } else if (auto hit = launch.buffers->overwritten_canary()) {
    const std::string& name = launch.buffers->name(hit->buffer);
    result.status = EmuStatus::out_of_bounds;
    result.message = fmt::format(
        "{}: out-of-bounds write to {}[{}] ({} has {} elements; found after the run in the "
        "padding around the buffer)",
        launch.kernel_name, name, hit->element, name, launch.buffers->elements(hit->buffer));
  }
  if (result.status == EmuStatus::ok) result.uninitialised_reads = report->uninitialised_reads;
  report->~Report();
  munmap(page, sizeof(Report));
  return result;
}

}  // namespace cutune::emu
