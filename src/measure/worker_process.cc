#include "src/measure/worker_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace cutune {

namespace {

constexpr int kChildFd = 3;

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return fmt::format("worker died: signal {} ({})", sig, name ? name : "?");
  }
  if (WIFEXITED(status)) return fmt::format("worker exited with code {}", WEXITSTATUS(status));
  return "worker ended";
}

}  // namespace

WorkerSupervisor::WorkerSupervisor(WorkerOptions options) : options_(std::move(options)) {
  if (options_.command.empty()) throw std::invalid_argument("worker command is empty");
}

WorkerSupervisor::~WorkerSupervisor() { stop(Stop::graceful); }

void WorkerSupervisor::set_task(WorkerTask task, std::vector<char> expected_outputs) {
  task_ = std::move(task);
  expected_ = std::move(expected_outputs);
  if (pid_ > 0)
    send_task();
  else
    start();
}

void WorkerSupervisor::start() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw WorkerError(fmt::format("socketpair: {}", std::strerror(errno)));
  std::vector<std::string> args = options_.command;
  args.push_back("--fd");
  args.push_back(std::to_string(kChildFd));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw WorkerError(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    // Only async-signal-safe calls until exec: the parent may have other threads.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (fds[1] == kChildFd) {
      fcntl(kChildFd, F_SETFD, 0);
    } else if (dup2(fds[1], kChildFd) < 0) {
      _exit(127);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  pid_ = pid;
  fd_ = fds[0];
  if (task_) send_task();
}

void WorkerSupervisor::send_task() {
  const double deadline = monotonic_seconds() + options_.setup_timeout_s;
  Frame reply;
  IoStatus s = write_frame(fd_, task_frame(*task_, expected_), deadline);
  if (s == IoStatus::ok) s = read_frame(fd_, reply, deadline);
  if (s != IoStatus::ok) {
    stop(s == IoStatus::closed ? Stop::dying : Stop::kill);
    throw WorkerError(fmt::format("the measuring worker did not take the task: {}",
                                  s == IoStatus::timeout ? "no answer in time" : last_exit_));
  }
  if (reply.kind == FrameKind::failed) {
    std::string why = reply.header.value("error", std::string("unknown reason"));
    stop(Stop::graceful);
    throw WorkerError("the measuring worker cannot set up the task: " + why);
  }
  if (reply.kind != FrameKind::ready) {
    stop(Stop::kill);
    throw WorkerError("the measuring worker answered the task with an unexpected frame");
  }
}

MeasureReply WorkerSupervisor::measure(MeasureRequest request) {
  if (pid_ < 0) start();
  MeasureReply reply;
  reply.id = request.id;
  const double deadline = monotonic_seconds() + options_.measure_timeout_s;
  Frame answer;
  IoStatus s = write_frame(fd_, measure_frame(request), deadline);
  if (s == IoStatus::ok) s = read_frame(fd_, answer, deadline);
  if (s == IoStatus::ok) {
    try {
      reply = reply_from_frame(answer);
      if (reply.id != request.id) throw std::invalid_argument("answer to another request");
      if (reply.context_poisoned) {
        stop(Stop::graceful);
        ++restarts_;
      }
      return reply;
    } catch (const std::invalid_argument&) {
      s = IoStatus::malformed;
    }
  }
  reply = MeasureReply{};
  reply.id = request.id;
  reply.context_poisoned = true;
  MeasureResult& result = reply.result;
  if (s == IoStatus::timeout) {
    stop(Stop::kill);
    result.status = MeasureStatus::timeout;
    result.error = fmt::format("no answer within {:g} s: worker killed by the watchdog",
                               options_.measure_timeout_s);
  } else if (s == IoStatus::malformed) {
    stop(Stop::kill);
    result.status = MeasureStatus::runtime_error;
    result.error = "the worker answered with a malformed message and was killed";
  } else {
    stop(Stop::dying);
    result.status = MeasureStatus::runtime_error;
    result.error = last_exit_;
  }
  ++restarts_;
  return reply;
}

void WorkerSupervisor::stop(Stop how) {
  if (pid_ < 0) return;
  if (how == Stop::graceful) {
    Frame bye;
    bye.kind = FrameKind::shutdown;
    write_frame(fd_, bye, monotonic_seconds() + 1.0);
  } else if (how == Stop::kill) {
    kill(pid_, SIGKILL);
  }
  close(fd_);
  fd_ = -1;
  last_exit_ = reap(how == Stop::graceful ? 5.0 : 2.0);
  pid_ = -1;
}

std::string WorkerSupervisor::reap(double wait_s) {
  int status = 0;
  const double deadline = monotonic_seconds() + wait_s;
  for (;;) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) return describe_status(status);
    if (r < 0 && errno != EINTR) return "worker vanished";
    if (monotonic_seconds() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid_, SIGKILL);
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  return describe_status(status);
}

}  // namespace cutune
