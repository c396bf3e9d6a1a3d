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

#include "src/lower/lower.h"
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

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
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
  GpuMeasurer(const Template& tmpl, const GpuMeasureOptions& options, DeviceInfo device)
      : tmpl_(tmpl),
        options_(options),
        device_(std::move(device)),
        limits_(verifier_limits(device_)),
        builder_(make_build_options(options, device_), std::max(options.compile_jobs, 1),
                 options.cache_dir.empty()
                     ? std::nullopt
                     : std::optional<std::filesystem::path>(options.cache_dir)),
        worker_(make_worker_options(options),
                options.devices.empty() ? std::vector<int>{options.device} : options.devices) {
    if (!options.arch.empty()) limits_.arch = options.arch;
    std::vector<char> expected;
    WorkerTask task = worker_task(tmpl, options, &expected);
    try {
      worker_.set_task(task, std::move(expected));
    } catch (const WorkerError& e) {
      if (task.reference != ReferenceKind::baseline) throw;
      // Without cuBLAS in the worker, the template's own CPU reference still checks answers.
      task = worker_task(tmpl, options, &expected, /*allow_baseline=*/false);
      worker_.set_task(task, std::move(expected));
    }
  }

  ~GpuMeasurer() override {
    std::lock_guard<std::mutex> lock(prefetch_mutex_);
    if (prefetch_.joinable()) prefetch_.join();
  }

  // Lowers and compiles the next batch on a thread of its own while this one is measured; the
  // builder's cache then hands measure() the cubins, and the real compile times are kept.
  // Called during a measurement too (from the tuner's background proposal): the lock keeps it
  // apart from measure_streaming's look at the running prefetch.
  void prefetch(const std::vector<Config>& next) override {
    std::lock_guard<std::mutex> lock(prefetch_mutex_);
    if (prefetch_.joinable()) prefetch_.join();
    prefetching_.clear();
    for (const Config& c : next) prefetching_.insert(c.index());
    prefetch_ = std::thread([this, next] {
      try {
        std::vector<CudaSource> sources;
        for (const Config& c : next) {
          Lowered lowered = lower(tmpl_, c, limits_);
          if (lowered.ok()) sources.push_back(*lowered.source);
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
    std::vector<CudaSource> sources;
    std::vector<size_t> slot;  // sources[j] belongs to batch[slot[j]]
    for (size_t i = 0; i < batch.size(); ++i) {
      Lowered lowered = lower(tmpl_, batch[i], limits_);
      if (!lowered.ok()) {
        results[i].status = MeasureStatus::invalid;
        results[i].error = join(lowered.verify.errors);
        if (on_result) on_result(i, results[i]);
        continue;
      }
      sources.push_back(*lowered.source);
      slot.push_back(i);
    }
    const std::vector<CudaSource> kept = sources;
    CompilePipeline pipeline(builder_, std::move(sources), options_.compile_jobs);
    std::vector<MeasureResult> compiled_info(kept.size());  // compile time and ptxas extras
    // Candidate j's final result (compile time, ptxas extras, which GPU), handed over at once.
    const auto finish = [&](size_t j, const PoolResult& measured) {
      MeasureResult& result = results[slot[j]];
      result = measured.result;
      {  // compiled ahead: the time of that compile, not of the cache lookup
        std::lock_guard<std::mutex> lock(prefetched_mutex_);
        auto it = prefetched_s_.find(builder_.cache_key(kept[j]));
        if (it != prefetched_s_.end()) {
          compiled_info[j].compile_s = it->second;
          if (compiled_info[j].extra.is_object()) compiled_info[j].extra["compiled_ahead"] = true;
          if (measured.device < 0) result.compile_s = it->second;
          prefetched_s_.erase(it);
        }
      }
      if (measured.device >= 0) {
        result.compile_s = compiled_info[j].compile_s;
        nlohmann::json extra = std::move(compiled_info[j].extra);
        if (result.extra.is_object()) extra.update(result.extra);
        extra["device"] = measured.device;
        result.extra = std::move(extra);
      }
      if (on_result) on_result(slot[j], result);
    };
    worker_.run(
        kept.size(),
        [&](size_t j) {
          WorkerPool::Prepared prepared;
          try {
            prepared = prepare_compiled(kept[j], pipeline.get(j), compiled_info[j]);
          } catch (const std::exception& e) {
            MeasureResult failed;
            failed.status = MeasureStatus::compile_error;
            failed.error = first_line(e.what());
            prepared = std::move(failed);
          }
          return prepared;
        },
        finish);
    return results;
  }

  std::string device_name() const override { return device_.name; }
  std::string target_arch() const override { return limits_.arch; }

 private:
  static BuildOptions make_build_options(const GpuMeasureOptions& o, const DeviceInfo& d) {
    BuildOptions b;
    b.arch = o.arch.empty() ? d.arch() : o.arch;
    return b;
  }

  static WorkerOptions make_worker_options(const GpuMeasureOptions& o) {
    WorkerOptions w;
    w.command = o.worker_command.empty() ? std::vector<std::string>{"/proc/self/exe", "__worker"}
                                         : o.worker_command;
    w.measure_timeout_s = o.timeout_seconds + o.max_measure_seconds;
    return w;
  }

  // The request for a compiled candidate, or its result when it cannot run; `info` gets the
  // compile time and ptxas extras either way. Runs on the pool's threads, one per candidate.
  WorkerPool::Prepared prepare_compiled(const CudaSource& source, const CompileResult& compiled,
                                        MeasureResult& info) const {
    MeasureResult& result = info;
    result.compile_s = compiled.seconds;
    if (!compiled.ok()) {
      result.status = MeasureStatus::compile_error;
      result.error = first_line(compiled.log);
      return result;
    }
    const PtxasInfo& p = compiled.ptxas;
    result.extra = {{"registers", p.registers},
                    {"spill_bytes", p.spill_store_bytes + p.spill_load_bytes},
                    {"static_smem_bytes", p.shared_bytes}};
    const int64_t threads = int64_t(source.launch.block.volume());
    const int64_t smem = int64_t(p.shared_bytes) + source.launch.dynamic_smem_bytes;
    if (p.parsed && int64_t(p.registers) * threads > device_.regs_per_block) {
      result.status = MeasureStatus::invalid;
      result.error = fmt::format("{} registers x {} threads exceed the {} registers of a block",
                                 p.registers, threads, device_.regs_per_block);
      return result;
    }
    if (smem > device_.max_shared_per_block_optin) {
      result.status = MeasureStatus::invalid;
      result.error = fmt::format("{} bytes of shared memory exceed the {} a block may have", smem,
                                 device_.max_shared_per_block_optin);
      return result;
    }
    MeasureRequest request;
    request.kernel_name = source.kernel_name;
    request.launch = source.launch;
    request.check = options_.check;
    request.cubin = compiled.cubin;
    if (std::string error = bind_kernel_arguments(source, tmpl_.tensors(), request);
        !error.empty()) {
      result.status = MeasureStatus::invalid;
      result.error = error;
      return result;
    }
    return request;
  }

  const Template& tmpl_;
  GpuMeasureOptions options_;
  DeviceInfo device_;
  ir::TargetLimits limits_;
  NvrtcBuilder builder_;
  WorkerPool worker_;  // one worker per GPU; it keeps the best time for early stopping
  std::mutex prefetch_mutex_;  // guards prefetch_ and prefetching_
  std::thread prefetch_;
  std::unordered_set<uint64_t> prefetching_;  // the batch prefetch_ compiles
  std::mutex prefetched_mutex_;
  std::unordered_map<uint64_t, double> prefetched_s_;  // cache key -> seconds compiled ahead
};

}  // namespace

std::string bind_kernel_arguments(const CudaSource& source, const std::vector<TensorSpec>& tensors,
                                  MeasureRequest& request) {
  request.args.clear();
  request.maps.clear();
  for (const KernelParam& param : source.params) {
    // A tensor map is encoded by the worker over the tensor it describes.
    const std::string& tensor = param.tensor_map ? param.tensor_map->buffer : param.name;
    auto it = std::find_if(tensors.begin(), tensors.end(),
                           [&](const TensorSpec& t) { return t.name == tensor; });
    if (param.tensor_map && it != tensors.end()) {
      request.maps.resize(source.params.size());
      request.maps[request.args.size()] = *param.tensor_map;
    } else if (!param.is_pointer || it == tensors.end()) {
      return fmt::format("kernel parameter '{}' is not one of the template's tensors", param.name);
    }
    request.args.push_back(int(it - tensors.begin()));
  }
  return "";
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

WorkerTask worker_task(const Template& tmpl, const GpuMeasureOptions& options,
                       std::vector<char>* expected, bool allow_baseline) {
  WorkerTask task;
  task.device = options.device;
  task.seed = options.seed;
  task.reduction_length = tmpl.reduction_length();
  task.timing = timing_options(options);
  const std::vector<TensorSpec> tensors = tmpl.tensors();
  for (const TensorSpec& t : tensors)
    task.tensors.push_back(
        {t.name, storage_dtype(t.type.dtype), t.elements, t.is_output, t.zero_init});
  if (allow_baseline) task.baseline = tmpl.baseline();
  expected->clear();
  if (!options.check) return task;

  if (task.baseline.kind == BaselineSpec::Kind::gemm) {
    // cuBLAS computes the reference on the GPU: a CPU GEMM of 4096³ would take minutes.
    task.reference = ReferenceKind::baseline;
    return task;
  }
  task.reference = ReferenceKind::host;
  std::vector<std::vector<float>> values;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const WorkerTensor& t = task.tensors[i];
    values.push_back(t.is_output ? std::vector<float>(size_t(t.elements), 0.0f)
                                 : input_values(options.seed, int(i), t.elements, t.dtype));
  }
  tmpl.reference(values);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].is_output) continue;
    const char* bytes = reinterpret_cast<const char*>(values[i].data());
    expected->insert(expected->end(), bytes, bytes + values[i].size() * sizeof(float));
  }
  return task;
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
    if (!merged[i].extra.is_object()) merged[i].extra = nlohmann::json::object();
    merged[i].extra["rounds"] = medians[i].size();
    merged[i].extra["round_medians_s"] = medians[i];
    if (mixed[i]) merged[i].extra["mixed_timers"] = true;  // no ratio may use these times
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

std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl,
                                            const GpuMeasureOptions& options) {
  return std::make_unique<GpuMeasurer>(tmpl, options, measuring_device(options));
}

std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl, const GpuMeasureOptions& options,
                                            DeviceInfo device) {
  return std::make_unique<GpuMeasurer>(tmpl, options, std::move(device));
}

}  // namespace cutune
