#include "src/runtime/worker_gpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "src/runtime/cublas_gemm.h"
#include "src/runtime/cuda_check.h"
#include "src/runtime/cuda_module.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/gpu_timer.h"
#include "src/runtime/l2_flush.h"
#include "src/runtime/nvml_api.h"
#include "src/runtime/worker_check.h"

namespace cutune {

CudaFault classify_cuda_error(int code, bool at_launch) {
  switch (static_cast<CUresult>(code)) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return {MeasureStatus::runtime_error, true};
    default:
      break;
  }
  if (at_launch) return {MeasureStatus::launch_error, false};
  return {MeasureStatus::runtime_error, true};
}

namespace {

// A candidate's failure, carried out of the measuring code to become its result.
struct CandidateFailure {
  MeasureStatus status;
  bool poisoned;
  std::string error;
};

class GpuBackend final : public WorkerBackend {
 public:
  void setup(const WorkerTask& task, std::vector<char> expected_blob) override {
    release();
    task_ = task;
    context_.emplace(task.device);
    context_->make_current();
    const std::vector<DeviceInfo> devices = list_devices();
    if (task.device < 0 || size_t(task.device) >= devices.size())
      throw std::runtime_error(fmt::format("no CUDA device {}", task.device));
    device_ = devices[size_t(task.device)];

    for (size_t i = 0; i < task.tensors.size(); ++i) {
      const WorkerTensor& t = task.tensors[i];
      if (t.dtype != "float32")
        throw std::runtime_error(fmt::format("tensor {} has dtype {}; only float32 is measured", t.name, t.dtype));
      buffers_.emplace_back(size_t(t.elements) * sizeof(float));
      if (!t.is_output) buffers_.back().upload(fill_input(task.seed, int(i), t.elements).data());
      else buffers_.back().fill_bytes(0);
    }
    expected_.assign(task.tensors.size(), {});
    if (task.reference == ReferenceKind::host) {
      size_t offset = 0;
      for (size_t i = 0; i < task.tensors.size(); ++i) {
        if (!task.tensors[i].is_output) continue;
        const size_t bytes = size_t(task.tensors[i].elements) * sizeof(float);
        if (offset + bytes > expected_blob.size())
          throw std::runtime_error("the expected outputs are shorter than the output tensors");
        expected_[i].resize(size_t(task.tensors[i].elements));
        std::memcpy(expected_[i].data(), expected_blob.data() + offset, bytes);
        offset += bytes;
      }
    }
    if (task.reference == ReferenceKind::cublas_gemm) {
      cublas_.emplace();
      const GemmReference& g = task.gemm;
      cublas_->sgemm({g.m, g.n, g.k, g.b_transposed}, buffers_.at(size_t(g.a)).get(),
                     buffers_.at(size_t(g.b)).get(), buffers_.at(size_t(g.c)).get());
      CUTUNE_CU_CHECK(require_driver().cuCtxSynchronize());
      expected_[size_t(g.c)].resize(size_t(task.tensors[size_t(g.c)].elements));
      buffers_[size_t(g.c)].download(expected_[size_t(g.c)].data());
    }
    tolerance_ = error_tolerance("float32", task.reduction_length);
    if (task.timing.flush_l2) flusher_.emplace(device_.l2_bytes);
    timer_ = make_kernel_timer(task.timing.prefer_cupti, &timer_note_);
  }

  MeasureReply measure(const MeasureRequest& request) override {
    MeasureReply reply;
    reply.id = request.id;
    MeasureResult& result = reply.result;
    if (!context_) throw std::runtime_error("measure before setup");
    context_->make_current();
    const GpuSample before = sample_cuda_device(task_.device);
    try {
      run(request, result);
    } catch (const CandidateFailure& f) {
      result.status = f.status;
      result.error = f.error;
      reply.context_poisoned = f.poisoned;
    }
    const GpuSample after = sample_cuda_device(task_.device);
    result.extra["gpu_before"] = before.to_json();
    result.extra["gpu_after"] = after.to_json();
    result.extra["throttled"] = before.throttled || after.throttled;
    if (!timer_note_.empty()) result.extra["timer_note"] = timer_note_;
    return reply;
  }

  ~GpuBackend() override { release(); }

 private:
  void release() {
    cublas_.reset();
    flusher_.reset();
    timer_.reset();
    buffers_.clear();
    context_.reset();
  }

  // Runs `call`, turning a CudaError into the candidate's failure.
  template <typename F>
  void guarded(F&& call, bool at_launch, const char* what) {
    try {
      call();
    } catch (const CudaError& e) {
      if (e.library() != "CUDA driver") {
        throw CandidateFailure{MeasureStatus::runtime_error, true, fmt::format("{}: {}", what, e.what())};
      }
      const CudaFault f = classify_cuda_error(e.code(), at_launch);
      throw CandidateFailure{f.status, f.poisoned, fmt::format("{}: {}", what, e.description())};
    }
  }

  void run(const MeasureRequest& request, MeasureResult& result) {
    const DriverApi& api = require_driver();
    std::optional<Module> module;
    CUfunction function = nullptr;
    std::vector<CUdeviceptr> pointers;
    std::vector<void*> args;
    std::function<void()> launch;

    if (request.what == MeasureWhat::kernel) {
      guarded([&] {
        Cubin cubin{request.cubin, request.kernel_name, device_.arch()};
        module.emplace(cubin);
        function = module->function(request.kernel_name, request.launch.dynamic_smem_bytes);
      }, true, "loading the kernel");
      for (int index : request.args) {
        if (index < 0 || size_t(index) >= buffers_.size())
          throw CandidateFailure{MeasureStatus::launch_error, false,
                                 fmt::format("kernel argument names tensor {} of {}", index, buffers_.size())};
        pointers.push_back(buffers_[size_t(index)].get());
      }
      for (CUdeviceptr& p : pointers) args.push_back(&p);
      launch = [&] { launch_kernel(function, request.launch, args.data()); };
    } else {
      if (!cublas_) cublas_.emplace();
      const GemmReference& g = task_.gemm;
      launch = [&, g] {
        cublas_->sgemm({g.m, g.n, g.k, g.b_transposed}, buffers_.at(size_t(g.a)).get(),
                       buffers_.at(size_t(g.b)).get(), buffers_.at(size_t(g.c)).get());
      };
    }

    if (request.check && task_.reference != ReferenceKind::none) {
      for (size_t i = 0; i < buffers_.size(); ++i)
        if (task_.tensors[i].is_output) guarded([&] { buffers_[i].fill_bytes(0xff); }, false, "clearing outputs");
      guarded(launch, true, "launch");
      guarded([&] { CUTUNE_CU_CHECK(api.cuCtxSynchronize()); }, false, "kernel");
      double worst = 0;
      std::string failure;
      for (size_t i = 0; i < buffers_.size(); ++i) {
        if (!task_.tensors[i].is_output || expected_[i].empty()) continue;
        std::vector<float> actual(expected_[i].size());
        guarded([&] { buffers_[i].download(actual.data()); }, false, "reading outputs");
        const CompareResult c = compare_outputs(actual.data(), expected_[i].data(), int64_t(actual.size()));
        worst = std::max(worst, c.max_rel_error);
        if (!c.ok(tolerance_) && failure.empty())
          failure = fmt::format("{}: {}", task_.tensors[i].name, c.describe(tolerance_));
      }
      result.max_rel_error = std::isfinite(worst) ? worst : 1e300;
      if (!failure.empty()) throw CandidateFailure{MeasureStatus::wrong_answer, false, failure};
    }

    const TimingOptions& o = task_.timing;
    for (int i = 0; i < o.warmup; ++i) guarded(launch, true, "warm-up launch");
    guarded([&] { CUTUNE_CU_CHECK(api.cuCtxSynchronize()); }, false, "warm-up");

    const std::function<void()> flush = [this] {
      if (flusher_) flusher_->flush();
    };
    const double start = monotonic_seconds();
    StopReason reason = StopReason::none;
    int batch = std::max(o.min_repeats, 1);
    while (reason == StopReason::none) {
      batch = std::min(batch, std::max(o.max_repeats - int(result.times_s.size()), 1));
      std::vector<double> times;
      try {
        times = timer_->time(flush, launch, batch);
      } catch (const CudaError& e) {
        const CudaFault f = classify_cuda_error(e.library() == "CUDA driver" ? e.code() : 0, false);
        throw CandidateFailure{f.status, true, fmt::format("timed run: {}", e.what())};
      } catch (const std::runtime_error& e) {
        if (timer_->kind() != TimerKind::cupti)
          throw CandidateFailure{MeasureStatus::runtime_error, true, fmt::format("timed run: {}", e.what())};
        // CUPTI could not account for the runs (records lost or foreign kernels): events from
        // now on, and say so.
        timer_note_ = fmt::format("fell back to CUDA events: {}", e.what());
        timer_ = make_event_timer();
        continue;
      }
      result.times_s.insert(result.times_s.end(), times.begin(), times.end());
      reason = should_stop(result.times_s, monotonic_seconds() - start, o, request.best_so_far_s);
      batch = std::max(batch, int(result.times_s.size()) / 2);
    }
    result.timer = timer_->kind();
    result.status = MeasureStatus::ok;
    const MedianCi ci = median_ci(result.times_s);
    result.extra["stop"] = std::string(to_string(reason));
    result.extra["median_ci_s"] = {ci.lo, ci.hi};
    result.extra["rel_ci"] = std::isfinite(ci.rel_half_width) ? ci.rel_half_width : -1.0;
    result.extra["l2_flush_bytes"] = flusher_ ? flusher_->bytes() : 0;
    if (reason == StopReason::early_stop) result.extra["early_stopped"] = true;
  }

  WorkerTask task_;
  std::optional<PrimaryContext> context_;
  DeviceInfo device_;
  std::vector<DeviceBuffer> buffers_;
  std::vector<std::vector<float>> expected_;
  std::optional<CublasGemm> cublas_;
  std::optional<L2Flusher> flusher_;
  std::unique_ptr<KernelTimer> timer_;
  std::string timer_note_;
  double tolerance_ = 0;
};

}  // namespace

std::unique_ptr<WorkerBackend> make_gpu_backend() { return std::make_unique<GpuBackend>(); }

}  // namespace cutune
