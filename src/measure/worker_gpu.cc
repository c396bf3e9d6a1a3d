#include "src/measure/worker_gpu.h"
#include "src/measure/worker_arguments.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "src/baselines/cublas_gemm.h"
#include "src/baselines/cudnn_conv.h"
#include "src/baselines/cudnn_conv_task.h"
#include "src/codegen/launch_grid.h"
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

void run_timed_rounds(const TimingOptions& o, std::unique_ptr<KernelTimer>& timer,
                      std::string& timer_note, const std::function<void()>& before_each,
                      const std::function<void()>& launch, double best_so_far_s,
                      int kernels_per_run, size_t l2_flush_bytes, MeasureResult& result) {
  const double start = monotonic_seconds();
  StopReason reason = StopReason::none;
  int batch = std::max(o.min_repeats, 1);
  while (reason == StopReason::none) {
    batch = std::min(batch, std::max(o.max_repeats - int(result.times_s.size()), 1));
    std::vector<double> times;
    try {
      times = timer->time(before_each, launch, batch, kernels_per_run);
    } catch (const CudaError& e) {
      if (e.library() == "CUPTI" && timer->kind() == TimerKind::cupti) {
        // The profiler failed, not the kernel: events from now on, and say so.
        timer_note = fmt::format("fell back to CUDA events: {}", e.what());
        timer = make_event_timer();
        continue;
      }
      const CudaFault f = classify_cuda_error(e.library() == "CUDA driver" ? e.code() : 0, false);
      throw TimedRunFailure{f.status, fmt::format("timed run: {}", e.what())};
    } catch (const std::runtime_error& e) {
      if (timer->kind() != TimerKind::cupti)
        throw TimedRunFailure{MeasureStatus::runtime_error, fmt::format("timed run: {}", e.what())};
      // CUPTI could not account for the runs (records lost or foreign kernels): events from
      // now on, and say so.
      timer_note = fmt::format("fell back to CUDA events: {}", e.what());
      timer = make_event_timer();
      continue;
    }
    result.times_s.insert(result.times_s.end(), times.begin(), times.end());
    reason = should_stop(result.times_s, monotonic_seconds() - start, o, best_so_far_s);
    batch = std::max(batch, int(result.times_s.size()) / 2);
  }
  result.timer = timer->kind();
  result.status = MeasureStatus::ok;
  const MedianCi ci = median_ci(result.times_s);
  TimingStats& stats = result.details.timing;
  stats.stop = std::string(to_string(reason));
  stats.median_ci_s = SecondsInterval{ci.lo, ci.hi};
  stats.rel_ci = std::isfinite(ci.rel_half_width) ? ci.rel_half_width : -1.0;
  stats.l2_flush_bytes = int64_t(l2_flush_bytes);
  if (reason == StopReason::early_stop) stats.early_stopped = true;
}

namespace {

// How replies name the reference, by the task's kind (cuDNN's replaces "cpu" where it agrees).
const char* reference_label(ReferenceKind k) {
  switch (k) {
    case ReferenceKind::host:
      return "cpu";
    case ReferenceKind::file:
      return "file";
    case ReferenceKind::baseline:
      return "cublas";
    case ReferenceKind::kernel:
      return "reference kernel";
    case ReferenceKind::none:
      break;
  }
  return "none";
}

class GpuBackend final : public WorkerBackend {
 public:
  GpuBackend() = default;

  void setup(const WorkerTask& task, std::vector<char> blob) override {
    release();
    task_ = task;
    const auto setup_start = std::chrono::steady_clock::now();
    auto lap_start = setup_start;
    setup_phases_.clear();
    const auto lap = [&](const char* phase) {  // seconds since the previous lap
      setup_phases_[phase] = seconds_since(lap_start);
      lap_start = std::chrono::steady_clock::now();
    };
    context_.emplace(task.device);
    context_->make_current();
    lap("context");
    const std::vector<DeviceInfo> devices = list_devices();
    if (task.device < 0 || size_t(task.device) >= devices.size())
      throw std::runtime_error(fmt::format("no CUDA device {}", task.device));
    device_ = devices[size_t(task.device)];

    // The blob's sections, in order (worker_protocol.h); task_from_frame checked its size.
    size_t offset = 0;
    const auto take = [&](int64_t bytes) {
      if (offset + size_t(bytes) > blob.size())
        throw std::runtime_error("the task's blob is shorter than its arguments");
      std::vector<char> out(blob.begin() + long(offset),
                            blob.begin() + long(offset + size_t(bytes)));
      offset += size_t(bytes);
      return out;
    };
    args_ = DeviceArguments(task, take);
    const size_t n = args_.size();
    lap("inputs");
    expected_.assign(n, {});
    if (task.reference == ReferenceKind::host || task.reference == ReferenceKind::file) {
      for (size_t i = 0; i < n; ++i) {
        if (!args_[i].is_output) continue;
        const std::vector<char> bytes = take(args_[i].elements * int64_t(sizeof(float)));
        expected_[i].resize(size_t(args_[i].elements));
        std::memcpy(expected_[i].data(), bytes.data(), bytes.size());
      }
    }
    if (task.reference == ReferenceKind::kernel)
      run_reference_kernel(take(task.reference_cubin_bytes));
    if (task.baseline.kind == BaselineSpec::Kind::gemm) {
      const GemmBaseline& g = task.baseline.gemm;
      for (int index : {g.a, g.b, g.c})
        if (index < 0 || size_t(index) >= n || !args_.has_buffer(size_t(index)))
          throw std::runtime_error("the GEMM baseline names a tensor the task lacks");
      cublas_.emplace();
      if (task.reference == ReferenceKind::baseline) {
        cublas_gemm();
        CUTUNE_CU_CHECK(require_driver().cuCtxSynchronize());
        expected_[size_t(g.c)] = args_.download_values(size_t(g.c));
      }
      if (g.input != ir::DType::Float32) find_cublas_algorithm();
    }
    lap("reference");
    if (task.timing.flush_l2) flusher_.emplace(device_.l2_bytes);
    timer_ = make_kernel_timer(task.timing.prefer_cupti, &timer_note_);
    reference_name_ = reference_label(task.reference);
    lap("timer");
    conv_ = cudnn_conv_problem(task.baseline);
    if (conv_) setup_cudnn();
    if (conv_) lap("cudnn");
    // The references are final now: each one's error floor once, not once a candidate.
    scales_.assign(n, 1.0);
    for (size_t i = 0; i < n; ++i)
      if (!expected_[i].empty())
        scales_[i] = compare_scale(expected_[i].data(), int64_t(expected_[i].size()));
    check_threads_ = int(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
    setup_phases_["total"] = seconds_since(setup_start);
  }

  MeasureReply measure(const MeasureRequest& request) override {
    MeasureReply reply;
    reply.id = request.id;
    MeasureResult& result = reply.result;
    if (!context_) throw std::runtime_error("measure before setup");
    context_->make_current();
    const auto t0 = std::chrono::steady_clock::now();
    const GpuSample before = sample_cuda_device(task_.device);
    phases_.clear();
    phases_["sample_before"] = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    try {
      run(request, result);
    } catch (const CandidateFailure& f) {
      result.status = f.status;
      result.error = f.error;
      reply.context_poisoned = f.poisoned;
    }
    phases_["run"] = seconds_since(t1);
    const auto t2 = std::chrono::steady_clock::now();
    const GpuSample after = sample_cuda_device(task_.device);
    phases_["sample_after"] = seconds_since(t2);
    // Where the worker's time for this request went (seconds): the GPU samples, and inside
    // "run", loading the module, the checked launch with its comparison, the timed runs.
    result.details.timing.phase_s = phases_;
    // The first reply of a task also says where the task's setup went (seconds): context,
    // inputs (allocation and upload), reference (the expected outputs copied in, or computed
    // by cuBLAS or the reference kernel), timer (L2 flush buffer, CUPTI), cudnn (algorithm
    // search and warm re-timing), total.
    if (!setup_phases_.empty()) {
      result.details.timing.setup_s = std::move(setup_phases_);
      setup_phases_.clear();
    }
    result.details.gpu.gpu_before = before.to_state();
    result.details.gpu.gpu_after = after.to_state();
    result.details.gpu.throttled = before.throttled || after.throttled;
    if (!timer_note_.empty()) result.details.timing.timer_note = timer_note_;
    BaselineFacts& b = result.details.baseline;
    b.reference = reference_name_;
    if (!cudnn_note_.empty()) b.cudnn_note = cudnn_note_;
    if (baseline_) b.merge(*baseline_);
    if (gemm_baseline_) b.merge(*gemm_baseline_);
    return reply;
  }

  ~GpuBackend() override { release(); }

 private:
  // The reference kernel on the task's initial arguments: its outputs become the expected ones.
  void run_reference_kernel(const std::vector<char>& cubin) {
    try {
      LoadedKernel ref = args_.load(cubin, task_.reference_kernel, device_.arch(),
                                    task_.reference_launch, task_.reference_args, {});
      args_.reset_outputs();
      launch_kernel(ref.function, task_.reference_launch, ref.args.data());
      CUTUNE_CU_CHECK(require_driver().cuCtxSynchronize());
      for (size_t i = 0; i < args_.size(); ++i)
        if (args_[i].is_output) expected_[i] = args_.download_values(i);
    } catch (const CandidateFailure& f) {
      throw std::runtime_error("the reference kernel failed: " + f.error);
    } catch (const CudaError& e) {
      throw std::runtime_error(std::string("the reference kernel failed: ") + e.what());
    }
  }

  static GemmStorage gemm_storage(ir::DType t) {
    return t == ir::DType::Float16    ? GemmStorage::float16
           : t == ir::DType::BFloat16 ? GemmStorage::bfloat16
                                      : GemmStorage::float32;
  }

  // cuBLAS computes the task's GEMM into its output tensor: SGEMM for fp32 (TF32 off), GemmEx
  // with fp32 accumulation for 16-bit inputs or outputs (after find_cublas_algorithm, by the
  // algorithm it chose).
  void cublas_gemm() {
    const GemmBaseline& g = task_.baseline.gemm;
    const SgemmShape shape{g.m, g.n, g.k, g.b_transposed};
    const CUdeviceptr a = args_.pointer(size_t(g.a)), b = args_.pointer(size_t(g.b)),
                      c = args_.pointer(size_t(g.c));
    if (g.input == ir::DType::Float32 && g.output == ir::DType::Float32) {
      cublas_->sgemm(shape, a, b, c);
      return;
    }
    cublas_->gemm_ex(shape, gemm_storage(g.input), gemm_storage(g.output), a, b, c);
  }

  // For a 16-bit GEMM, after the reference: the fastest of cublasGemmEx's default and
  // cuBLASLt's heuristic algorithms becomes the baseline (replies say which, and how many of
  // cuBLASLt's ran). It writes the output tensor, which every candidate overwrites anyway.
  void find_cublas_algorithm() {
    const GemmBaseline& g = task_.baseline.gemm;
    BaselineFacts info;
    try {
      const std::vector<CublasAlgoPerf> algos = cublas_->find_gemm_ex(
          {g.m, g.n, g.k, g.b_transposed}, gemm_storage(g.input), gemm_storage(g.output),
          args_.pointer(size_t(g.a)), args_.pointer(size_t(g.b)), args_.pointer(size_t(g.c)));
      info.cublaslt_algos = std::count_if(algos.begin(), algos.end(),
                                          [](const auto& a) { return a.ok && a.lt_index >= 0; });
      if (!cublas_->lt_note().empty()) info.cublaslt_note = cublas_->lt_note();
    } catch (const CudaError& e) {
      info.cublaslt_note = std::string("no algorithm search: ") + e.what();
    }
    info.cublas_algo = cublas_->chosen().name;
    gemm_baseline_ = std::move(info);
  }

  // Runs `launch` back to back for about `seconds` of wall time, so that a library call timed
  // next does not pay for clocks still ramping up from idle.
  void keep_busy(const std::function<void()>& launch, double seconds) {
    const DriverApi& api = require_driver();
    const double end = monotonic_seconds() + seconds;
    int runs = 1;
    while (monotonic_seconds() < end) {
      for (int i = 0; i < runs; ++i) launch();
      CUTUNE_CU_CHECK(api.cuCtxSynchronize());
      runs = std::min(runs * 2, 1024);
    }
  }

  void release() {
    cudnn_filter_.reset();
    cudnn_output_.reset();
    cudnn_.reset();
    conv_.reset();
    baseline_.reset();
    cudnn_note_.clear();
    gemm_baseline_.reset();
    cublas_.reset();
    flusher_.reset();
    timer_.reset();
    args_ = DeviceArguments();
    expected_.clear();
    context_.reset();
  }

  void run(const MeasureRequest& request, MeasureResult& result) {
    const DriverApi& api = require_driver();
    LoadedKernel loaded;
    std::function<void()> launch;

    if (request.what == MeasureWhat::baseline) {
      if (cublas_) {
        launch = [this] { cublas_gemm(); };
      } else if (cudnn_) {
        launch = [this] { cudnn_forward(); };
      } else {
        throw CandidateFailure{MeasureStatus::launch_error, false,
                               "this task has no baseline" +
                                   (cudnn_note_.empty() ? std::string() : ": " + cudnn_note_)};
      }
      // The baseline is timed like a candidate, after the clocks have come up.
      guarded([&] { keep_busy(launch, 0.3); }, true, "baseline warm-up");
    } else {
      const auto load_start = std::chrono::steady_clock::now();
      loaded = args_.load(request.cubin, request.kernel_name, device_.arch(), request.launch,
                          request.args, request.maps);
      phases_["load"] = seconds_since(load_start);
      // A persistent kernel takes as many blocks as this device holds at once.
      LaunchSpec sized = request.launch;
      sized.grid = launch_grid(request.launch, device_.sm_count);
      launch = [&loaded, sized] { launch_kernel(loaded.function, sized, loaded.args.data()); };
    }

    const auto check_start = std::chrono::steady_clock::now();
    if (request.check && task_.reference != ReferenceKind::none) {
      // Outputs start from their initial bytes: NaN where a never-written element must fail,
      // zero where the kernel adds into them, a user kernel's own initial values.
      guarded([&] { args_.reset_outputs(); }, false, "resetting outputs");
      guarded(launch, true, "launch");
      guarded([&] { CUTUNE_CU_CHECK(api.cuCtxSynchronize()); }, false, "kernel");
      double worst = 0;
      std::string failure;
      for (size_t i = 0; i < args_.size(); ++i) {
        const WorkerArgument& a = args_[i];
        if (!a.is_output || expected_[i].empty()) continue;
        // One host buffer, reused: a fresh 64 MiB vector a candidate costs its page faults.
        staging_.resize(size_t(a.bytes()));
        guarded([&] { args_.buffer(i).download(staging_.data()); }, false, "reading outputs");
        const CompareResult c = compare_stored(staging_.data(), a.elem, expected_[i].data(),
                                               a.elements, scales_[i], check_threads_);
        worst = std::max(worst, c.max_rel_error);
        if (!c.ok(a.tolerance) && failure.empty())
          failure = fmt::format("{}: {}", a.name, c.describe(a.tolerance));
      }
      result.max_rel_error = std::isfinite(worst) ? worst : 1e300;
      phases_["check"] = seconds_since(check_start);
      if (!failure.empty()) throw CandidateFailure{MeasureStatus::wrong_answer, false, failure};
    }

    // A candidate is one kernel a run: CUPTI must return exactly one record per run.
    const auto timing_start = std::chrono::steady_clock::now();
    time_runs(launch, request.best_so_far_s, result, request.what == MeasureWhat::kernel ? 1 : 0);
    phases_["timing"] = seconds_since(timing_start);
  }

  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  // Warm-up, then timed rounds (each run after an L2 flush) until should_stop; fills
  // `result` (times, timer, status ok, statistics in details.timing). Throws CandidateFailure.
  void time_runs(const std::function<void()>& launch, double best_so_far_s, MeasureResult& result,
                 int kernels_per_run = 0) {
    const DriverApi& api = require_driver();
    const TimingOptions& o = task_.timing;
    for (int i = 0; i < o.warmup; ++i) guarded(launch, true, "warm-up launch");
    guarded([&] { CUTUNE_CU_CHECK(api.cuCtxSynchronize()); }, false, "warm-up");

    // Before each timed run: the arguments reset every run back to their initial bytes (a
    // split-K output the kernel adds into), then the L2 flush. Neither is inside the kernel's
    // timed interval. Other outputs keep what the previous run left, as in Kernel Tuner.
    const std::function<void()> before_each = [this] {
      args_.reset_each_run();
      if (flusher_) flusher_->flush();
    };
    try {
      run_timed_rounds(o, timer_, timer_note_, before_each, launch, best_so_far_s, kernels_per_run,
                       flusher_ ? flusher_->bytes() : 0, result);
    } catch (const TimedRunFailure& f) {
      throw CandidateFailure{f.status, true, f.error};
    }
  }

  // cuDNN for a convolution task: the output of its most accurate working algorithm replaces
  // the parent's CPU reference (after the two agree), and its fastest algorithm is timed here
  // once, with the candidates' timer and flush, as the baseline every reply carries. Without
  // cuDNN (or when it disagrees) the CPU reference stays and the replies say why.
  void setup_cudnn() {
    const CudnnConvProblem& p = *conv_;
    const int tensors = int(args_.size());
    if (p.input >= tensors || p.filter >= tensors || p.output >= tensors || p.input < 0 ||
        p.filter < 0 || p.output < 0 || !args_[size_t(p.output)].is_output ||
        !args_.has_buffer(size_t(p.input)) || !args_.has_buffer(size_t(p.filter)) ||
        !args_.has_buffer(size_t(p.output))) {
      cudnn_note_ = "the cuDNN problem does not match the task's tensors";
      return;
    }
    const size_t y = size_t(p.output);
    const int64_t width = dtype_bytes(p.dtype);
    try {
      cudnn_.emplace(p);
      const CudnnConvDescriptors d = cudnn_descriptors(p);
      if (d.filter_needs_transpose) {
        std::vector<char> rsck(args_.buffer(size_t(p.filter)).bytes());
        args_.buffer(size_t(p.filter)).download(rsck.data());
        const std::vector<char> krsc = rsck_to_krsc_bytes(rsck, p.r, p.s, p.c, p.k, width);
        cudnn_filter_.emplace(krsc.size());
        cudnn_filter_->upload(krsc.data());
      }
      // cuDNN writes its output in the input's type; a task whose output is wider (fp16 in,
      // fp32 out) gets a buffer of its own for cuDNN, which is then timed but checks nothing.
      if (p.dtype != args_[y].elem) cudnn_output_.emplace(size_t(args_[y].elements * width));
      const std::vector<CudnnAlgoPerf> algos =
          cudnn_->find(args_.pointer(size_t(p.input)), cudnn_filter_pointer(), args_.pointer(y));
      const CudnnAlgoPerf fastest = algos.front();
      // The reference: an implicit-GEMM algorithm sums products like a direct convolution;
      // FFT and Winograd transforms add their own rounding error.
      const CudnnAlgoPerf* exact = &fastest;
      for (int preferred : {0 /*IMPLICIT_GEMM*/, 1 /*IMPLICIT_PRECOMP_GEMM*/, 2 /*GEMM*/}) {
        auto it = std::find_if(algos.begin(), algos.end(),
                               [&](const CudnnAlgoPerf& a) { return a.ok && a.algo == preferred; });
        if (it != algos.end()) {
          exact = &*it;
          break;
        }
      }
      std::vector<float> reference = cudnn_output(*exact);
      std::vector<float> fastest_out = cudnn_output(fastest);
      const bool same_type = !cudnn_output_;
      BaselineFacts baseline;
      baseline.name = "cudnn";
      baseline.baseline_algo = fastest.name;
      baseline.cudnn_reference_algo = exact->name;
      // How many of the graph API's plans ran next to the legacy algorithms.
      baseline.cudnn_graph_plans = std::count_if(
          algos.begin(), algos.end(), [](const CudnnAlgoPerf& a) { return a.ok && a.plan >= 0; });
      if (!cudnn_->graph_note().empty()) baseline.cudnn_graph_note = cudnn_->graph_note();
      const CompareResult fast_vs_ref =
          compare_outputs(fastest_out.data(), reference.data(), int64_t(reference.size()));
      baseline.baseline_max_rel_error =
          std::isfinite(fast_vs_ref.max_rel_error) ? fast_vs_ref.max_rel_error : 1e300;
      bool use = same_type;
      if (!same_type)
        cudnn_note_ =
            fmt::format("cuDNN computes a {} output; the CPU reference checks candidates", p.dtype);
      if (same_type && !expected_[y].empty()) {
        const CompareResult c =
            compare_outputs(reference.data(), expected_[y].data(), int64_t(reference.size()));
        baseline.cudnn_vs_cpu_max_rel_error =
            std::isfinite(c.max_rel_error) ? c.max_rel_error : 1e300;
        if (!c.ok(args_[y].tolerance)) {
          use = false;
          cudnn_note_ = "cuDNN (" + exact->name +
                        ") disagrees with the CPU reference: " + c.describe(args_[y].tolerance);
        }
      }
      if (use) {
        expected_[y] = std::move(reference);
        reference_name_ = "cudnn";
      }
      MeasureResult timed;
      keep_busy([this] { cudnn_forward(); }, 0.3);
      time_runs([this] { cudnn_forward(); }, std::numeric_limits<double>::infinity(), timed);
      const MedianCi ci = median_ci(timed.times_s);
      baseline.baseline_s = timed.median_s();
      baseline.baseline_median_ci_s = SecondsInterval{ci.lo, ci.hi};
      baseline.baseline_runs = int64_t(timed.times_s.size());
      baseline.baseline_timer = std::string(to_string(timed.timer));
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
    cudnn_output_.reset();
    baseline_.reset();
    std::string line = why.substr(0, why.find('\n'));
    cudnn_note_ = "cuDNN unavailable: " + line;
    // Without a CPU reference there is nothing left to check candidates against.
    if (conv_ && expected_[size_t(conv_->output)].empty() && task_.reference != ReferenceKind::none)
      throw std::runtime_error(cudnn_note_);
  }

  CUdeviceptr cudnn_filter_pointer() const {
    return cudnn_filter_ ? cudnn_filter_->get() : args_.pointer(size_t(conv_->filter));
  }

  CUdeviceptr cudnn_output_pointer() const {
    return cudnn_output_ ? cudnn_output_->get() : args_.pointer(size_t(conv_->output));
  }

  void cudnn_forward() {
    cudnn_->forward(args_.pointer(size_t(conv_->input)), cudnn_filter_pointer(),
                    cudnn_output_pointer());
  }

  // Runs `algo` once and returns the output; leaves `algo` chosen.
  std::vector<float> cudnn_output(const CudnnAlgoPerf& algo) {
    cudnn_->choose(algo);
    DeviceBuffer& y = cudnn_output_ ? *cudnn_output_ : args_.buffer(size_t(conv_->output));
    y.fill_bytes(0xff);
    cudnn_forward();
    CUTUNE_CU_CHECK(require_driver().cuCtxSynchronize());
    std::vector<char> bytes(y.bytes());
    y.download(bytes.data());
    return decode_values(bytes.data(), args_[size_t(conv_->output)].elements, conv_->dtype);
  }

  std::optional<CudnnConvProblem> conv_;
  std::optional<CudnnConv> cudnn_;
  std::optional<DeviceBuffer> cudnn_filter_;  // the filter in KRSC for an RSCK task
  std::optional<DeviceBuffer> cudnn_output_;  // cuDNN's output when its type is not the task's
  std::optional<BaselineFacts> baseline_;
  std::optional<BaselineFacts> gemm_baseline_;  // which cuBLAS algorithm is the baseline
  std::map<std::string, double> phases_;        // the current request's phase_s
  std::map<std::string, double> setup_phases_;  // until the task's first reply
  std::string cudnn_note_;
  std::string reference_name_ = "none";

  WorkerTask task_;
  std::optional<PrimaryContext> context_;
  DeviceInfo device_;
  DeviceArguments args_;
  std::vector<std::vector<float>> expected_;  // per argument: outputs with a reference
  std::optional<CublasGemm> cublas_;
  std::optional<L2Flusher> flusher_;
  std::unique_ptr<KernelTimer> timer_;
  std::string timer_note_;
  std::vector<double> scales_;  // per argument: compare_scale of expected_ (setup)
  std::vector<char> staging_;   // host copy of the output being checked
  int check_threads_ = 1;
};

}  // namespace

std::unique_ptr<WorkerBackend> make_gpu_backend() { return std::make_unique<GpuBackend>(); }

}  // namespace cutune
