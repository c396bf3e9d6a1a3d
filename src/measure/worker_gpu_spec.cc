// The worker's GPU backend for a user kernel's task (WorkerTask::user, written by src/spec):
// the arguments' bytes come from the parent, scalars are passed by value, __constant__ symbols
// are filled after every module load, and the reference outputs are computed once at setup by
// the reference kernel (or come in the task). Kept apart from worker_gpu.cc, whose tensors are
// the templates' float tensors with a host or library reference.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "src/measure/correctness.h"
#include "src/measure/gpu_timer.h"
#include "src/measure/l2_flush.h"
#include "src/measure/worker_gpu.h"
#include "src/runtime/cuda_check.h"
#include "src/runtime/cuda_module.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"

namespace cutune {

namespace {

struct Failure {
  MeasureStatus status;
  bool poisoned;
  std::string error;
};

template <class T>
std::vector<float> widen(const char* bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes + i * int64_t(sizeof(T)), sizeof(T));
    out[size_t(i)] = float(v);
  }
  return out;
}

// The elements of `bytes` of element type `elem` as floats, for compare_outputs.
std::vector<float> user_values(const std::vector<char>& bytes, const std::string& elem) {
  const char* p = bytes.data();
  const auto n = [&](int64_t width) { return int64_t(bytes.size()) / width; };
  if (elem == "float32" || elem == "float16" || elem == "bfloat16")
    return decode_values(p, n(dtype_bytes(elem)), elem);
  if (elem == "float64") return widen<double>(p, n(8));
  if (elem == "int8") return widen<int8_t>(p, n(1));
  if (elem == "int16") return widen<int16_t>(p, n(2));
  if (elem == "int32") return widen<int32_t>(p, n(4));
  if (elem == "int64") return widen<int64_t>(p, n(8));
  if (elem == "uint8") return widen<uint8_t>(p, n(1));
  if (elem == "uint16") return widen<uint16_t>(p, n(2));
  if (elem == "uint32") return widen<uint32_t>(p, n(4));
  if (elem == "uint64") return widen<uint64_t>(p, n(8));
  throw std::runtime_error(fmt::format("unknown element type '{}'", elem));
}

class UserKernelBackend final : public WorkerBackend {
 public:
  void setup(const WorkerTask& task, std::vector<char> blob) override {
    release();
    task_ = task;
    const UserKernelTask& u = *task.user;
    context_.emplace(task.device);
    context_->make_current();
    const std::vector<DeviceInfo> devices = list_devices();
    if (task.device < 0 || size_t(task.device) >= devices.size())
      throw std::runtime_error(fmt::format("no CUDA device {}", task.device));
    device_ = devices[size_t(task.device)];

    size_t offset = 0;
    auto take = [&](int64_t bytes) {
      std::vector<char> out(blob.begin() + long(offset),
                            blob.begin() + long(offset + size_t(bytes)));
      offset += size_t(bytes);
      return out;
    };
    for (const UserArgument& a : u.arguments) {
      initial_.push_back(take(a.bytes));
      buffers_.emplace_back();
      if (a.kind == UserArgKind::buffer) {
        buffers_.back().emplace(size_t(std::max<int64_t>(a.bytes, 1)));
        buffers_.back()->upload(initial_.back().data());
      }
    }
    expected_.assign(u.arguments.size(), {});
    if (u.expected_in_blob)
      for (size_t i = 0; i < u.arguments.size(); ++i)
        if (u.arguments[i].is_output)
          expected_[i] = user_values(take(u.arguments[i].bytes), u.arguments[i].elem);
    const std::vector<char> reference_cubin = take(u.reference_cubin_bytes);
    if (task.timing.flush_l2) flusher_.emplace(device_.l2_bytes);
    timer_ = make_kernel_timer(task.timing.prefer_cupti, &timer_note_);

    if (!u.expected_in_blob) {
      // The reference kernel's outputs on the same inputs are what candidates must produce.
      try {
        Loaded ref =
            load(reference_cubin, u.reference_kernel, u.reference_launch, u.reference_args);
        reset_outputs();
        launch_kernel(ref.function, u.reference_launch, ref.args.data());
        CUTUNE_CU_CHECK(require_driver().cuCtxSynchronize());
        for (size_t i = 0; i < u.arguments.size(); ++i)
          if (u.arguments[i].is_output) expected_[i] = download(i);
      } catch (const Failure& f) {
        throw std::runtime_error("the reference kernel failed: " + f.error);
      } catch (const CudaError& e) {
        throw std::runtime_error(std::string("the reference kernel failed: ") + e.what());
      }
    }
  }

  MeasureReply measure(const MeasureRequest& request) override {
    MeasureReply reply;
    reply.id = request.id;
    if (!context_) throw std::runtime_error("measure before setup");
    context_->make_current();
    try {
      run(request, reply.result);
    } catch (const Failure& f) {
      reply.result.status = f.status;
      reply.result.error = f.error;
      reply.context_poisoned = f.poisoned;
    }
    if (!timer_note_.empty()) reply.result.extra["timer_note"] = timer_note_;
    reply.result.extra["reference"] = task_.user->expected_in_blob ? "file" : "reference kernel";
    return reply;
  }

  ~UserKernelBackend() override { release(); }

 private:
  // A loaded candidate: the module, its kernel, and the parameter values it is launched with
  // (pointers to device buffers, scalars by value).
  struct Loaded {
    std::optional<Module> module;
    CUfunction function = nullptr;
    std::vector<std::array<char, 16>> values;
    std::vector<void*> args;
  };

  template <typename F>
  static void guarded(F&& call, bool at_launch, const char* what) {
    try {
      call();
    } catch (const CudaError& e) {
      if (e.library() != "CUDA driver")
        throw Failure{MeasureStatus::runtime_error, true, fmt::format("{}: {}", what, e.what())};
      const CudaFault f = classify_cuda_error(e.code(), at_launch);
      throw Failure{f.status, f.poisoned, fmt::format("{}: {}", what, e.description())};
    }
  }

  Loaded load(const std::vector<char>& cubin, const std::string& kernel, const LaunchSpec& launch,
              const std::vector<int>& arg_indices) {
    const UserKernelTask& u = *task_.user;
    Loaded l;
    guarded(
        [&] {
          l.module.emplace(Cubin{cubin, kernel, device_.arch()});
          l.function = l.module->function(kernel, launch.dynamic_smem_bytes);
        },
        true, "loading the kernel");
    // Constant memory belongs to the module: every load gets the spec's values.
    for (size_t i = 0; i < u.arguments.size(); ++i) {
      const UserArgument& a = u.arguments[i];
      if (a.kind != UserArgKind::constant) continue;
      CUdeviceptr symbol = 0;
      size_t bytes = 0;
      const CUresult r =
          require_driver().cuModuleGetGlobal_v2(&symbol, &bytes, l.module->get(), a.name.c_str());
      if (r != CUDA_SUCCESS)
        throw Failure{MeasureStatus::launch_error, false,
                      fmt::format("the kernel has no __constant__ symbol '{}'", a.name)};
      if (bytes < size_t(a.bytes))
        throw Failure{MeasureStatus::launch_error, false,
                      fmt::format("__constant__ '{}' has {} bytes; the spec fills {}", a.name,
                                  bytes, a.bytes)};
      guarded(
          [&] {
            CUTUNE_CU_CHECK(
                require_driver().cuMemcpyHtoD_v2(symbol, initial_[i].data(), size_t(a.bytes)));
          },
          false, "filling constant memory");
    }
    for (int index : arg_indices) {
      if (index < 0 || size_t(index) >= u.arguments.size() ||
          u.arguments[size_t(index)].kind == UserArgKind::constant)
        throw Failure{MeasureStatus::launch_error, false,
                      fmt::format("kernel parameter {} names no buffer or scalar", index)};
      std::array<char, 16> v{};
      const UserArgument& a = u.arguments[size_t(index)];
      if (a.kind == UserArgKind::scalar) {
        if (a.bytes > int64_t(v.size()))
          throw Failure{MeasureStatus::launch_error, false,
                        fmt::format("scalar '{}' of {} bytes", a.name, a.bytes)};
        std::memcpy(v.data(), initial_[size_t(index)].data(), size_t(a.bytes));
      } else {
        const CUdeviceptr p = buffers_[size_t(index)]->get();
        std::memcpy(v.data(), &p, sizeof p);
      }
      l.values.push_back(v);
    }
    for (auto& v : l.values) l.args.push_back(v.data());
    return l;
  }

  // Outputs back to their initial bytes: a kernel may accumulate into them.
  void reset_outputs() {
    for (size_t i = 0; i < buffers_.size(); ++i)
      if (task_.user->arguments[i].is_output && buffers_[i])
        buffers_[i]->upload(initial_[i].data());
  }

  std::vector<float> download(size_t i) const {
    std::vector<char> bytes(size_t(task_.user->arguments[i].bytes));
    buffers_[i]->download(bytes.data());
    return user_values(bytes, task_.user->arguments[i].elem);
  }

  void run(const MeasureRequest& request, MeasureResult& result) {
    const DriverApi& api = require_driver();
    if (request.what != MeasureWhat::kernel)
      throw Failure{MeasureStatus::launch_error, false, "a user kernel's task has no baseline"};
    Loaded l = load(request.cubin, request.kernel_name, request.launch, request.args);
    const std::function<void()> launch = [&] {
      launch_kernel(l.function, request.launch, l.args.data());
    };
    const UserKernelTask& u = *task_.user;
    if (request.check) {
      guarded([&] { reset_outputs(); }, false, "resetting outputs");
      guarded(launch, true, "launch");
      guarded([&] { CUTUNE_CU_CHECK(api.cuCtxSynchronize()); }, false, "kernel");
      double worst = 0;
      std::string failure;
      for (size_t i = 0; i < u.arguments.size(); ++i) {
        if (!u.arguments[i].is_output) continue;
        std::vector<float> actual;
        guarded([&] { actual = download(i); }, false, "reading outputs");
        const CompareResult c =
            compare_outputs(actual.data(), expected_[i].data(), int64_t(actual.size()));
        worst = std::max(worst, c.max_rel_error);
        if (!c.ok(u.arguments[i].tolerance) && failure.empty())
          failure =
              fmt::format("{}: {}", u.arguments[i].name, c.describe(u.arguments[i].tolerance));
      }
      result.max_rel_error = std::isfinite(worst) ? worst : 1e300;
      if (!failure.empty()) throw Failure{MeasureStatus::wrong_answer, false, failure};
    }

    const TimingOptions& o = task_.timing;
    for (int i = 0; i < o.warmup; ++i) guarded(launch, true, "warm-up launch");
    guarded([&] { CUTUNE_CU_CHECK(api.cuCtxSynchronize()); }, false, "warm-up");
    // Outputs are reset for the checked launch only: as in Kernel Tuner, timed runs of a kernel
    // that accumulates into its output see whatever the previous run left.
    const std::function<void()> before_each = [this] {
      if (flusher_) flusher_->flush();
    };
    try {
      run_timed_rounds(o, timer_, timer_note_, before_each, launch, request.best_so_far_s, 1,
                       flusher_ ? flusher_->bytes() : 0, result);
    } catch (const TimedRunFailure& f) {
      throw Failure{f.status, true, f.error};
    }
  }

  void release() {
    flusher_.reset();
    timer_.reset();
    buffers_.clear();
    initial_.clear();
    expected_.clear();
    context_.reset();
  }

  WorkerTask task_;
  std::optional<PrimaryContext> context_;
  DeviceInfo device_;
  std::vector<std::vector<char>> initial_;            // per argument: its bytes before a launch
  std::vector<std::optional<DeviceBuffer>> buffers_;  // per argument: buffers only
  std::vector<std::vector<float>> expected_;          // per argument: outputs only
  std::optional<L2Flusher> flusher_;
  std::unique_ptr<KernelTimer> timer_;
  std::string timer_note_;
};

}  // namespace

std::unique_ptr<WorkerBackend> make_gpu_user_backend() {
  return std::make_unique<UserKernelBackend>();
}

}  // namespace cutune
