#include "src/measure/worker_main.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "src/measure/worker_gpu.h"

namespace cutune {

namespace {

class FakeBackend final : public WorkerBackend {
 public:
  explicit FakeBackend(int fd) : fd_(fd) {}

  void setup(const WorkerTask& task, std::vector<char> blob) override {
    for (const WorkerArgument& a : task.arguments)
      if (a.name == "fail_setup") throw std::runtime_error("fake setup failure requested");
    ++setups_;
    task_ = summary(task, blob);
    baseline_ = task.baseline.to_json();
    device_ = task.device;
  }

  MeasureReply measure(const MeasureRequest& r) override {
    MeasureReply reply;
    reply.id = r.id;
    const std::string& what = r.kernel_name;
    if (what == "fake_sleep") {
      for (;;) pause();
    } else if (what == "fake_crash") {
      signal(SIGSEGV, SIG_DFL);
      raise(SIGSEGV);
    } else if (what == "fake_abort") {
      std::abort();
    } else if (what == "fake_exit") {
      _exit(3);
    } else if (what == "fake_garbage") {
      const char junk[64] = "this is not a frame, not at all; the parent must cope.";
      if (write(fd_, junk, sizeof junk) < 0) _exit(4);
      for (;;) pause();
    }
    if (what == "fake_slow") std::this_thread::sleep_for(std::chrono::milliseconds(300));
    MeasureResult& result = reply.result;
    MeasureDetails& d = result.details;
    d.worker.pid = getpid();
    d.worker.setups = setups_;
    d.gpu.device = int64_t(device_);
    d.compile.cubin_bytes = int64_t(r.cubin.size());
    d.worker.task = task_;
    d.worker.baseline_spec = baseline_;
    if (what == "fake_ok" || what == "fake_slow") {
      result.status = MeasureStatus::ok;
      result.times_s = {1e-3 * double(1 + r.id % 3)};
      result.timer = TimerKind::cuda_event;
    } else if (what == "fake_wrong") {
      result.status = MeasureStatus::wrong_answer;
      result.error = "fake wrong answer";
      result.max_rel_error = 1.0;
    } else if (what == "fake_poison") {
      result.status = MeasureStatus::runtime_error;
      result.error = "fake sticky error";
      reply.context_poisoned = true;
    } else {
      result.status = MeasureStatus::launch_error;
      result.error = "fake backend: unknown behaviour '" + what + "'";
    }
    return reply;
  }

 private:
  // What a GPU backend would make of the task: per argument its kind, element type, size,
  // fill rule and (for blob-filled ones) first up to 8 initial bytes in hex; the blob's other
  // sections.
  static nlohmann::json summary(const WorkerTask& t, const std::vector<char>& blob) {
    nlohmann::json args = nlohmann::json::array();
    size_t offset = 0;
    for (const WorkerArgument& a : t.arguments) {
      nlohmann::json j = {{"name", a.name},
                          {"kind", to_string(a.kind)},
                          {"elem", a.elem},
                          {"bytes", a.bytes()},
                          {"init", to_string(a.init)},
                          {"is_output", a.is_output},
                          {"reset_each_run", a.reset_each_run},
                          {"tolerance", a.tolerance}};
      if (a.init == ArgInit::blob) {
        std::string hex;
        for (int64_t i = 0; i < std::min<int64_t>(a.bytes(), 8); ++i) {
          static const char digits[] = "0123456789abcdef";
          const auto b = static_cast<unsigned char>(blob[offset + size_t(i)]);
          hex += digits[b >> 4];
          hex += digits[b & 15];
        }
        j["first_bytes"] = hex;
        offset += size_t(a.bytes());
      }
      args.push_back(std::move(j));
    }
    return {{"arguments", args},
            {"expected_bytes", t.expected_bytes()},
            {"reference_kernel", t.reference_kernel},
            {"reference_args", t.reference_args},
            {"reference_cubin_bytes", t.reference_cubin_bytes},
            {"blob_bytes", blob.size()}};
  }

  int fd_;
  int setups_ = 0;
  nlohmann::json task_, baseline_;
  int device_ = -1;
};

}  // namespace

std::unique_ptr<WorkerBackend> make_fake_backend(int fd) {
  return std::make_unique<FakeBackend>(fd);
}

int run_worker(int fd, WorkerBackend& backend) {
  for (;;) {
    Frame in;
    IoStatus s = read_frame(fd, in);
    if (s == IoStatus::closed) return 0;
    if (s != IoStatus::ok) {
      std::cerr << "cutune worker: malformed frame from the parent\n";
      return 2;
    }
    Frame out;
    try {
      switch (in.kind) {
        case FrameKind::shutdown:
          return 0;
        case FrameKind::task: {
          WorkerTask task = task_from_frame(in);
          try {
            backend.setup(task, std::move(in.blob));
            out.kind = FrameKind::ready;
          } catch (const std::exception& e) {
            out.kind = FrameKind::failed;
            out.header = {{"error", e.what()}};
          }
          break;
        }
        case FrameKind::measure: {
          MeasureRequest request = measure_request_from_frame(std::move(in));
          MeasureReply reply;
          try {
            reply = backend.measure(request);
          } catch (const std::exception& e) {
            reply = MeasureReply{};
            reply.result.status = MeasureStatus::runtime_error;
            reply.result.error = std::string("worker: ") + e.what();
            reply.context_poisoned = true;
          }
          reply.id = request.id;
          out = reply_frame(reply);
          break;
        }
        default:
          std::cerr << "cutune worker: unexpected frame kind\n";
          return 2;
      }
    } catch (const std::invalid_argument& e) {
      std::cerr << "cutune worker: " << e.what() << "\n";
      return 2;
    }
    if (write_frame(fd, out) != IoStatus::ok) return 0;
  }
}

int worker_main(const std::vector<std::string>& args) {
  // Ctrl-C reaches the whole process group; the parent ends the run after the batch in flight
  // (and then shuts its workers down), so the candidate being measured must not die of it.
  signal(SIGINT, SIG_IGN);
  int fd = 3;
  bool fake = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--fake")
      fake = true;
    else if (args[i] == "--fd" && i + 1 < args.size())
      fd = std::atoi(args[++i].c_str());
    else {
      std::cerr << "cutune worker: unknown argument '" << args[i]
                << "' (accepted: --fd N, --fake)\n";
      return 2;
    }
  }
  std::unique_ptr<WorkerBackend> backend = fake ? make_fake_backend(fd) : make_gpu_backend();
  const int code = run_worker(fd, *backend);
  backend.reset();
  return code;
}

}  // namespace cutune
