#include "src/measure/gpu_measurer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/measure/correctness.h"
#include "src/measure/worker_pool.h"

namespace cutune {

namespace {

std::string first_line(const std::string& text) {
  const size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

// Compiles sources on `jobs` threads in index order, so the first results are ready first and
// measuring starts while the rest compile.
class CompilePipeline {
 public:
  CompilePipeline(NvrtcBuilder& builder, std::vector<CudaSource> sources, int jobs)
      : sources_(std::move(sources)), promises_(sources_.size()) {
    for (auto& p : promises_) futures_.push_back(p.get_future());
    for (int t = 0; t < std::max(jobs, 1); ++t)
      threads_.emplace_back([this, &builder] {
        for (size_t i; (i = next_++) < sources_.size();) {
          try {
            promises_[i].set_value(builder.compile(sources_[i]));
          } catch (...) {
            promises_[i].set_exception(std::current_exception());
          }
        }
      });
  }
  ~CompilePipeline() {
    next_ = sources_.size();
    for (std::thread& t : threads_) t.join();
  }
  CompileResult get(size_t i) { return futures_[i].get(); }

 private:
  std::vector<CudaSource> sources_;
  std::vector<std::promise<CompileResult>> promises_;
  std::vector<std::future<CompileResult>> futures_;
  std::atomic<size_t> next_{0};
  std::vector<std::thread> threads_;
};

class GpuMeasurer final : public Measurer {
 public:
  GpuMeasurer(std::unique_ptr<KernelTask> task, const GpuMeasureOptions& options,
              DeviceInfo device)
      : task_(std::move(task)),
        options_(options),
        target_(measuring_target(std::move(device), options)),
        builder_(BuildOptions{.arch = target_.limits.arch}, std::max(options.compile_jobs, 1),
                 options.cache_dir.empty()
                     ? std::nullopt
                     : std::optional<std::filesystem::path>(options.cache_dir)),
        worker_(make_worker_options(options),
                options.devices.empty() ? std::vector<int>{options.device} : options.devices) {
    WorkerSetup setup = task_->worker_setup(options_, builder_, target_, /*with_baseline=*/true);
    try {
      worker_.set_task(setup.task, std::move(setup.blob));
    } catch (const WorkerError& e) {
      if (setup.task.reference != ReferenceKind::baseline) throw;
      // Without the library in the worker, the task's own reference still checks answers.
      setup = task_->worker_setup(options_, builder_, target_, /*with_baseline=*/false);
      worker_.set_task(setup.task, std::move(setup.blob));
    }
    // A baseline that is the reference itself (cuBLAS for a GEMM) has nothing to be checked by.
    check_baseline_ = setup.task.reference != ReferenceKind::baseline;
  }

  ~GpuMeasurer() override {
    std::lock_guard<std::mutex> lock(prefetch_mutex_);
    if (prefetch_.joinable()) prefetch_.join();
  }

  // Makes and compiles the next batch's instances on a thread of its own while this one is
  // measured; the builder's cache then hands measure() the cubins, and the real compile times
  // are kept. Called during a measurement too (from the tuner's background proposal): the lock
  // keeps it apart from measure_streaming's look at the running prefetch.
  void prefetch(const std::vector<Config>& next) override {
    std::lock_guard<std::mutex> lock(prefetch_mutex_);
    if (prefetch_.joinable()) prefetch_.join();
    prefetching_.clear();
    for (const Config& c : next) prefetching_.insert(c.index());
    prefetch_ = std::thread([this, next] {
      try {
        std::vector<CudaSource> sources;
        for (const Config& c : next) {
          InstanceOrWhy made = task_->instance(c, target_);
          if (made.instance) sources.push_back(std::move(made.instance->source));
        }
        const std::vector<CompileResult> compiled = builder_.compile_batch(sources);
        std::lock_guard<std::mutex> lock(prefetched_mutex_);
        for (size_t i = 0; i < sources.size() && i < compiled.size(); ++i)
          prefetched_s_[builder_.cache_key(sources[i])] = compiled[i].seconds;
      } catch (...) {
        // Only a head start: measure() compiles whatever this did not, and reports its errors.
      }
    });
  }

  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    return measure_streaming(batch, {});
  }

  std::vector<MeasureResult> measure_streaming(const std::vector<Config>& batch,
                                               const ResultSink& on_result) override {
    // A prefetch of this batch finishes first (compiling it twice at once would gain nothing);
    // the prefetch of the next batch, started before or during this one, goes on meanwhile.
    {
      std::lock_guard<std::mutex> lock(prefetch_mutex_);
      if (prefetch_.joinable() &&
          std::any_of(batch.begin(), batch.end(),
                      [&](const Config& c) { return prefetching_.count(c.index()) > 0; }))
        prefetch_.join();
    }
    std::vector<MeasureResult> results(batch.size());
    std::vector<KernelInstance> instances;
    std::vector<size_t> slot;  // instances[j] belongs to batch[slot[j]]
    for (size_t i = 0; i < batch.size(); ++i) {
      InstanceOrWhy made = task_->instance(batch[i], target_);
      if (!made.instance) {
        results[i].status = MeasureStatus::invalid;
        results[i].error = made.why;
        if (on_result) on_result(i, results[i]);
        continue;
      }
      instances.push_back(std::move(*made.instance));
      slot.push_back(i);
    }
    std::vector<CudaSource> sources;
    for (const KernelInstance& in : instances) sources.push_back(in.source);
    CompilePipeline pipeline(builder_, std::move(sources), options_.compile_jobs);
    std::vector<MeasureResult> compiled_info(instances.size());  // compile time, ptxas extras
    // Candidate j's final result (compile time, ptxas extras, which GPU), handed over at once.
    const auto finish = [&](size_t j, const PoolResult& measured) {
      MeasureResult& result = results[slot[j]];
      result = measured.result;
      {  // compiled ahead: the time of that compile, not of the cache lookup
        std::lock_guard<std::mutex> lock(prefetched_mutex_);
        auto it = prefetched_s_.find(builder_.cache_key(instances[j].source));
        if (it != prefetched_s_.end()) {
          compiled_info[j].compile_s = it->second;
          // Only a compile that ptxas reported on says how it was compiled.
          if (!compiled_info[j].details.empty())
            compiled_info[j].details.compile.compiled_ahead = true;
          if (measured.device < 0) result.compile_s = it->second;
          prefetched_s_.erase(it);
        }
      }
      if (measured.device >= 0) {
        result.compile_s = compiled_info[j].compile_s;
        MeasureDetails details = std::move(compiled_info[j].details);
        details.merge(result.details);
        details.gpu.device = int64_t(measured.device);
        result.details = std::move(details);
      }
      if (on_result) on_result(slot[j], result);
    };
    worker_.run(
        instances.size(),
        [&](size_t j) -> WorkerPool::Prepared {
          try {
            Candidate c =
                compiled_candidate(instances[j], pipeline.get(j), target_.device, options_.check);
            compiled_info[j] = c.result;
            if (c.runnable) return std::move(c.request);
            return std::move(c.result);
          } catch (const std::exception& e) {
            MeasureResult failed;
            failed.status = MeasureStatus::compile_error;
            failed.error = first_line(e.what());
            return failed;
          }
        },
        finish);
    return results;
  }

  std::vector<MeasureResult> versus_baseline(const std::vector<Config>& configs,
                                             int rounds) override {
    std::vector<MeasureResult> out(configs.size() + 1);
    std::vector<MeasureRequest> requests(1);
    requests[0].what = MeasureWhat::baseline;
    requests[0].check = check_baseline_ && options_.check;
    std::vector<size_t> slot = {0};  // requests[j] belongs to out[slot[j]]
    for (size_t i = 0; i < configs.size(); ++i) {
      InstanceOrWhy made = task_->instance(configs[i], target_);
      if (!made.instance) {
        out[i + 1].status = MeasureStatus::invalid;
        out[i + 1].error = made.why;
        continue;
      }
      Candidate c = compiled_candidate(*made.instance, builder_.compile(made.instance->source),
                                       target_.device, options_.check);
      if (!c.runnable) {
        out[i + 1] = std::move(c.result);
        continue;
      }
      requests.push_back(std::move(c.request));
      slot.push_back(i + 1);
    }
    const auto send = [this](const MeasureRequest& request) {
      MeasureReply reply;
      reply.result = worker_.run(1, [&](size_t) { return request; }).at(0).result;
      return reply;
    };
    std::vector<MeasureResult> timed = measure_interleaved(send, requests, rounds);
    for (size_t j = 0; j < timed.size(); ++j) out[slot[j]] = std::move(timed[j]);
    return out;
  }

  std::string device_name() const override { return target_.device.name; }
  std::string target_arch() const override { return target_.limits.arch; }

 private:
  static WorkerOptions make_worker_options(const GpuMeasureOptions& o) {
    WorkerOptions w;
    w.command = o.worker_command.empty() ? std::vector<std::string>{"/proc/self/exe", "__worker"}
                                         : o.worker_command;
    w.measure_timeout_s = o.timeout_seconds + o.max_measure_seconds;
    return w;
  }

  std::unique_ptr<KernelTask> task_;
  GpuMeasureOptions options_;
  MeasuringTarget target_;
  NvrtcBuilder builder_;
  WorkerPool worker_;  // one worker per GPU; it keeps the best time for early stopping
  bool check_baseline_ = true;
  std::mutex prefetch_mutex_;  // guards prefetch_ and prefetching_
  std::thread prefetch_;
  std::unordered_set<uint64_t> prefetching_;  // the batch prefetch_ compiles
  std::mutex prefetched_mutex_;
  std::unordered_map<uint64_t, double> prefetched_s_;  // cache key -> seconds compiled ahead
};

}  // namespace

Candidate compiled_candidate(const KernelInstance& instance, const CompileResult& compiled,
                             const DeviceInfo& device, bool check) {
  Candidate out;
  MeasureResult& result = out.result;
  result.compile_s = compiled.seconds;
  if (!compiled.ok()) {
    result.status = MeasureStatus::compile_error;
    result.error = first_line(compiled.log);
    return out;
  }
  const PtxasInfo& p = compiled.ptxas;
  result.details.compile.registers = p.registers;
  result.details.compile.spill_bytes = p.spill_store_bytes + p.spill_load_bytes;
  result.details.compile.static_smem_bytes = p.shared_bytes;
  const LaunchSpec& launch = instance.source.launch;
  const int64_t threads = int64_t(launch.block.volume());
  if (p.parsed && int64_t(p.registers) * threads > device.regs_per_block) {
    result.status = MeasureStatus::invalid;
    result.error = fmt::format("{} registers x {} threads exceed the {} registers of a block",
                               p.registers, threads, device.regs_per_block);
    return out;
  }
  const int64_t smem = int64_t(p.shared_bytes) + launch.dynamic_smem_bytes;
  const int64_t smem_limit = std::max(device.max_shared_per_block_optin, device.max_shared_per_block);
  if (smem > smem_limit) {
    result.status = MeasureStatus::invalid;
    result.error = fmt::format("{} bytes of shared memory exceed the {} a block may have", smem,
                               smem_limit);
    return out;
  }
  out.runnable = true;
  MeasureRequest& request = out.request;
  request.kernel_name = compiled.kernel_name;  // a name expression's lowered name
  request.launch = launch;
  if (p.parsed) request.launch.static_smem_bytes = uint32_t(p.shared_bytes);
  request.args = instance.args;
  request.maps = instance.maps;
  request.check = check;
  request.cubin = compiled.cubin;
  return out;
}

TimingOptions timing_options(const GpuMeasureOptions& o) {
  TimingOptions t;
  t.flush_l2 = o.flush_l2;
  t.prefer_cupti = o.prefer_cupti;
  t.warmup = o.warmup;
  t.min_repeats = o.min_repeats;
  t.max_repeats = o.max_repeats;
  t.min_seconds = o.min_repeat_seconds;
  t.max_seconds = o.max_measure_seconds;
  t.target_rel_ci = o.target_rel_ci;
  t.early_stop_factor = o.early_stop_factor;
  return t;
}

std::vector<MeasureResult> measure_interleaved(
    const std::function<MeasureReply(const MeasureRequest&)>& send,
    const std::vector<MeasureRequest>& requests, int rounds) {
  std::vector<MeasureResult> merged(requests.size());
  std::vector<nlohmann::json> medians(requests.size(), nlohmann::json::array());
  std::vector<bool> failed(requests.size(), false);
  std::vector<bool> mixed(requests.size(), false);
  for (int round = 0; round < std::max(rounds, 1); ++round) {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (failed[i]) continue;
      MeasureResult r = send(requests[i]).result;
      if (!r.ok()) {
        merged[i] = std::move(r);
        failed[i] = true;
        continue;
      }
      if (!medians[i].empty() && r.timer != merged[i].timer) mixed[i] = true;
      medians[i].push_back(r.median_s());
      std::vector<double> earlier = std::move(merged[i].times_s);
      const double compile_s = merged[i].compile_s;
      merged[i] = std::move(r);
      merged[i].times_s.insert(merged[i].times_s.begin(), earlier.begin(), earlier.end());
      merged[i].compile_s += compile_s;
    }
  }
  for (size_t i = 0; i < merged.size(); ++i) {
    if (failed[i]) continue;
    RoundStats& rounds = merged[i].details.rounds;
    rounds.rounds = int64_t(medians[i].size());
    rounds.round_medians_s = medians[i];
    if (mixed[i]) rounds.mixed_timers = true;  // no ratio may use these times
  }
  return merged;
}

DeviceInfo measuring_device(const GpuMeasureOptions& options) {
  require_driver();
  const std::vector<DeviceInfo> devices = list_devices();
  const std::vector<int> wanted =
      options.devices.empty() ? std::vector<int>{options.device} : options.devices;
  for (int d : wanted)
    if (d < 0 || size_t(d) >= devices.size())
      throw NoDeviceError(
          fmt::format("no CUDA device found: device {} requested, {} present", d, devices.size()));
  // The GPUs are of one kind (device_selection.h): the first one describes them all.
  return devices[size_t(wanted.front())];
}

MeasuringTarget measuring_target(DeviceInfo device, const GpuMeasureOptions& options) {
  MeasuringTarget target{std::move(device), {}};
  target.limits = verifier_limits(target.device);
  if (!options.arch.empty()) target.limits.arch = options.arch;
  return target;
}

std::unique_ptr<Measurer> make_gpu_measurer(std::unique_ptr<KernelTask> task,
                                            const GpuMeasureOptions& options) {
  return make_gpu_measurer(std::move(task), options, measuring_device(options));
}

std::unique_ptr<Measurer> make_gpu_measurer(std::unique_ptr<KernelTask> task,
                                            const GpuMeasureOptions& options, DeviceInfo device) {
  return std::make_unique<GpuMeasurer>(std::move(task), options, std::move(device));
}

std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl,
                                            const GpuMeasureOptions& options) {
  return make_gpu_measurer(template_kernel_task(tmpl), options);
}

std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl, const GpuMeasureOptions& options,
                                            DeviceInfo device) {
  return make_gpu_measurer(template_kernel_task(tmpl), options, std::move(device));
}

}  // namespace cutune
