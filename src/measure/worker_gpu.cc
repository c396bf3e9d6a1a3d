#include "src/measure/worker_gpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "src/baselines/cublas_gemm.h"
#include "src/baselines/cudnn_conv.h"
#include "src/runtime/cuda_check.h"
#include "src/runtime/cuda_module.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/measure/gpu_timer.h"
#include "src/measure/l2_flush.h"
#include "src/measure/nvml_api.h"
#include "src/measure/correctness.h"

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
  explicit GpuBackend(std::optional<CudnnConvProblem> conv) : conv_(std::move(conv)) {}

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
    reference_name_ = task.reference == ReferenceKind::host          ? "cpu"
                      : task.reference == ReferenceKind::cublas_gemm ? "cublas"
                                                                     : "none";
    if (conv_) setup_cudnn();
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
    result.extra["reference"] = reference_name_;
    if (!cudnn_note_.empty()) result.extra["cudnn_note"] = cudnn_note_;
    if (baseline_) result.extra.update(*baseline_);
    return reply;
  }

  ~GpuBackend() override { release(); }

 private:
  void release() {
    cudnn_filter_.reset();
    cudnn_.reset();
    baseline_.reset();
    cudnn_note_.clear();
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

    if (request.what == MeasureWhat::kernel && request.kernel_name == kCudnnConvKernel) {
      if (!cudnn_)
        throw CandidateFailure{MeasureStatus::launch_error, false,
                               "cuDNN is not set up for this task: " +
                                   (cudnn_note_.empty() ? std::string("not a convolution") : cudnn_note_)};
      launch = [this] { cudnn_forward(); };
    } else if (request.what == MeasureWhat::kernel) {
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

    time_runs(launch, request.best_so_far_s, result);
  }

  // Warm-up, then timed rounds (each run after an L2 flush) until should_stop; fills
  // `result` (times, timer, status ok, statistics in extra). Throws CandidateFailure.
  void time_runs(const std::function<void()>& launch, double best_so_far_s, MeasureResult& result) {
    const DriverApi& api = require_driver();
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
      reason = should_stop(result.times_s, monotonic_seconds() - start, o, best_so_far_s);
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

  // cuDNN for a convolution task: the output of its most accurate working algorithm replaces
  // the parent's CPU reference (after the two agree), and its fastest algorithm is timed here
  // once, with the candidates' timer and flush, as the baseline every reply carries. Without
  // cuDNN (or when it disagrees) the CPU reference stays and the replies say why.
  void setup_cudnn() {
    const CudnnConvProblem& p = *conv_;
    const int tensors = int(buffers_.size());
    if (p.input >= tensors || p.filter >= tensors || p.output >= tensors || p.input < 0 ||
        p.filter < 0 || p.output < 0 || !task_.tensors[size_t(p.output)].is_output) {
      cudnn_note_ = "the cuDNN problem does not match the task's tensors";
      return;
    }
    const size_t y = size_t(p.output);
    try {
      cudnn_.emplace(p);
      const CudnnConvDescriptors d = cudnn_descriptors(p);
      if (d.filter_needs_transpose) {
        std::vector<float> rsck(buffers_[size_t(p.filter)].bytes() / sizeof(float));
        buffers_[size_t(p.filter)].download(rsck.data());
        const std::vector<float> krsc = rsck_to_krsc(rsck, p.r, p.s, p.c, p.k);
        cudnn_filter_.emplace(krsc.size() * sizeof(float));
        cudnn_filter_->upload(krsc.data());
      }
      const std::vector<CudnnAlgoPerf> algos =
          cudnn_->find(buffers_[size_t(p.input)].get(), cudnn_filter_pointer(), buffers_[y].get());
      const CudnnAlgoPerf fastest = algos.front();
      // The reference: an implicit-GEMM algorithm sums products like a direct convolution;
      // FFT and Winograd transforms add their own rounding error.
      const CudnnAlgoPerf* exact = &fastest;
      for (int preferred : {0 /*IMPLICIT_GEMM*/, 1 /*IMPLICIT_PRECOMP_GEMM*/, 2 /*GEMM*/}) {
        auto it = std::find_if(algos.begin(), algos.end(), [&](const CudnnAlgoPerf& a) {
          return a.ok && a.algo == preferred;
        });
        if (it != algos.end()) {
          exact = &*it;
          break;
        }
      }
      std::vector<float> reference = cudnn_output(*exact);
      std::vector<float> fastest_out = cudnn_output(fastest);
      nlohmann::json baseline = {{"baseline", "cudnn"},
                                 {"baseline_algo", fastest.name},
                                 {"cudnn_reference_algo", exact->name}};
      const CompareResult fast_vs_ref =
          compare_outputs(fastest_out.data(), reference.data(), int64_t(reference.size()));
      baseline["baseline_max_rel_error"] = std::isfinite(fast_vs_ref.max_rel_error) ? fast_vs_ref.max_rel_error : 1e300;
      bool use = true;
      if (!expected_[y].empty()) {
        const CompareResult c =
            compare_outputs(reference.data(), expected_[y].data(), int64_t(reference.size()));
        baseline["cudnn_vs_cpu_max_rel_error"] = std::isfinite(c.max_rel_error) ? c.max_rel_error : 1e300;
        if (!c.ok(tolerance_)) {
          use = false;
          cudnn_note_ = "cuDNN (" + exact->name + ") disagrees with the CPU reference: " + c.describe(tolerance_);
        }
      }
      if (use) {
        expected_[y] = std::move(reference);
        reference_name_ = "cudnn";
      }
      MeasureResult timed;
      time_runs([this] { cudnn_forward(); }, std::numeric_limits<double>::infinity(), timed);
      const MedianCi ci = median_ci(timed.times_s);
      baseline["baseline_s"] = timed.median_s();
      baseline["baseline_median_ci_s"] = {ci.lo, ci.hi};
      baseline["baseline_runs"] = timed.times_s.size();
      baseline["baseline_timer"] = std::string(to_string(timed.timer));
      baseline_ = std::move(baseline);
    } catch (const CandidateFailure& f) {
      drop_cudnn(f.error);
    } catch (const std::exception& e) {
      drop_cudnn(e.what());
    }
  }

  void drop_cudnn(const std::string& why) {
    cudnn_.reset();
    cudnn_filter_.reset();
    baseline_.reset();
    std::string line = why.substr(0, why.find('\n'));
    cudnn_note_ = "cuDNN unavailable: " + line;
    // Without a CPU reference there is nothing left to check candidates against.
    if (conv_ && expected_[size_t(conv_->output)].empty() && task_.reference != ReferenceKind::none)
      throw std::runtime_error(cudnn_note_);
  }

  CUdeviceptr cudnn_filter_pointer() const {
    return cudnn_filter_ ? cudnn_filter_->get() : buffers_[size_t(conv_->filter)].get();
  }

  void cudnn_forward() {
    cudnn_->forward(buffers_[size_t(conv_->input)].get(), cudnn_filter_pointer(),
                    buffers_[size_t(conv_->output)].get());
  }

  // Runs `algo` once and returns the output; leaves `algo` chosen.
  std::vector<float> cudnn_output(const CudnnAlgoPerf& algo) {
    cudnn_->choose(algo);
    DeviceBuffer& y = buffers_[size_t(conv_->output)];
    y.fill_bytes(0xff);
    cudnn_forward();
    CUTUNE_CU_CHECK(require_driver().cuCtxSynchronize());
    std::vector<float> out(y.bytes() / sizeof(float));
    y.download(out.data());
    return out;
  }

  std::optional<CudnnConvProblem> conv_;
  std::optional<CudnnConv> cudnn_;
  std::optional<DeviceBuffer> cudnn_filter_;  // the filter in KRSC for an RSCK task
  std::optional<nlohmann::json> baseline_;
  std::string cudnn_note_;
  std::string reference_name_ = "none";

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

std::unique_ptr<WorkerBackend> make_gpu_backend(std::optional<CudnnConvProblem> conv) {
  return std::make_unique<GpuBackend>(std::move(conv));
}

int gpu_worker_main(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  std::optional<CudnnConvProblem> conv;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--cudnn-conv") {
      rest.push_back(args[i]);
      continue;
    }
    if (i + 1 == args.size()) {
      std::cerr << "cutune worker: --cudnn-conv needs a JSON problem\n";
      return 2;
    }
    try {
      conv = CudnnConvProblem::from_json(nlohmann::json::parse(args[++i]));
    } catch (const std::exception& e) {
      std::cerr << "cutune worker: bad --cudnn-conv: " << e.what() << "\n";
      return 2;
    }
  }
  if (!conv) return worker_main(rest);
  int fd = 3;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--fd" && i + 1 < rest.size()) {
      fd = std::atoi(rest[++i].c_str());
    } else {
      std::cerr << "cutune worker: unknown argument '" << rest[i]
                << "' (accepted with --cudnn-conv: --fd N)\n";
      return 2;
    }
  }
  std::unique_ptr<WorkerBackend> backend = make_gpu_backend(std::move(conv));
  const int code = run_worker(fd, *backend);
  backend.reset();
  return code;
}

}  // namespace cutune
