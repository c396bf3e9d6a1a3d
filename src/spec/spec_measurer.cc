#include "src/spec/spec_measurer.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "src/measure/worker_pool.h"
#include "src/runtime/driver_api.h"
#include "src/spec/spec_buffers.h"
#include "src/spec/spec_verify.h"

namespace cutune::spec {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

void append(std::vector<char>& blob, const std::vector<std::byte>& bytes) {
  const char* p = reinterpret_cast<const char*>(bytes.data());
  blob.insert(blob.end(), p, p + bytes.size());
}

// Kernel parameters are the spec's arguments without the constant-memory ones, in order.
std::vector<int> kernel_arg_indices(const KernelSpec& spec) {
  std::vector<int> out;
  for (size_t i = 0; i < spec.arguments.size(); ++i)
    if (!spec.arguments[i].is_constant) out.push_back(int(i));
  return out;
}

std::string read_file(const std::filesystem::path& path, const std::string& field) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw SpecError(fmt::format("{}: no file '{}'", field, path.string()));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

WorkerOptions worker_options(const GpuMeasureOptions& o) {
  WorkerOptions w;
  w.command = o.worker_command.empty() ? std::vector<std::string>{"/proc/self/exe", "__worker"}
                                       : o.worker_command;
  w.measure_timeout_s = o.timeout_seconds + o.max_measure_seconds;
  return w;
}

BuildOptions build_options(const SpecTask& task, const GpuMeasureOptions& o,
                           const DeviceInfo& device) {
  BuildOptions b;
  b.arch = o.arch.empty() ? device.arch() : o.arch;
  b.extra_flags = task.spec().compiler_options;
  return b;
}

class SpecMeasurer final : public Measurer {
 public:
  SpecMeasurer(const SpecTask& task, const GpuMeasureOptions& options, DeviceInfo device)
      : task_(task),
        options_(options),
        device_(std::move(device)),
        builder_(build_options(task, options, device_), std::max(options.compile_jobs, 1),
                 options.cache_dir.empty()
                     ? std::nullopt
                     : std::optional<std::filesystem::path>(options.cache_dir)),
        pool_(worker_options(options),
              options.devices.empty() ? std::vector<int>{options.device} : options.devices) {
    SpecWorkerTask t = spec_worker_task(task_, options_, builder_, device_);
    reference_ = std::move(t.reference);
    pool_.set_task(t.task, t.blob);
  }

  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    std::vector<MeasureResult> results(batch.size());
    std::vector<SpecInstance> instances;
    std::vector<CudaSource> sources;
    std::vector<size_t> slot;  // sources[j] belongs to batch[slot[j]]
    for (size_t i = 0; i < batch.size(); ++i) {
      MeasureResult& r = results[i];
      r.status = MeasureStatus::invalid;
      if (auto why = task_.space().violation(batch[i])) {
        r.error = "condition " + *why;
        continue;
      }
      try {
        SpecInstance in = task_.instantiate(batch[i]);
        if (auto why = SpecTask::launch_violation(in, device_)) {
          r.error = *why;
          continue;
        }
        sources.push_back(task_.nvrtc_source(in));
        instances.push_back(std::move(in));
        slot.push_back(i);
      } catch (const SpecError& e) {
        r.error = e.what();
      }
    }
    // Every candidate of the batch compiles before the first is measured; NVRTC runs on the
    // builder's threads.
    const std::vector<CompileResult> compiled = builder_.compile_batch(sources);
    std::vector<SpecCandidate> candidates;
    for (size_t j = 0; j < sources.size(); ++j)
      candidates.push_back(
          spec_candidate(task_, reference_, instances[j], compiled[j], device_, options_.check));
    std::vector<PoolResult> measured = pool_.run(candidates.size(), [&](size_t j) {
      if (!candidates[j].runnable) return WorkerPool::Prepared(candidates[j].result);
      return WorkerPool::Prepared(candidates[j].request);
    });
    for (size_t j = 0; j < candidates.size(); ++j) {
      MeasureResult& result = results[slot[j]];
      result = std::move(measured[j].result);
      if (measured[j].device < 0) continue;
      result.compile_s = candidates[j].result.compile_s;
      nlohmann::json extra = candidates[j].result.extra;
      if (result.extra.is_object()) extra.update(result.extra);
      extra["device"] = measured[j].device;
      result.extra = std::move(extra);
    }
    return results;
  }

  std::string device_name() const override { return device_.name; }
  std::string target_arch() const override { return builder_.options().arch; }

 private:
  const SpecTask& task_;
  GpuMeasureOptions options_;
  DeviceInfo device_;
  NvrtcBuilder builder_;
  WorkerPool pool_;
  SpecInstance reference_;
};

}  // namespace

SpecWorkerTask spec_worker_task(const SpecTask& task, const GpuMeasureOptions& options,
                                NvrtcBuilder& builder, const DeviceInfo& device) {
  const KernelSpec& spec = task.spec();
  const SpecReference& ref = spec.reference;
  SpecWorkerTask out;
  out.reference = task.instantiate(ref.configuration);
  const SpecInstance& in = out.reference;
  WorkerTask& t = out.task;
  t.device = options.device;
  t.seed = options.seed;
  t.timing = timing_options(options);
  UserKernelTask u;
  for (size_t i = 0; i < spec.arguments.size(); ++i) {
    const SpecArgument& a = spec.arguments[i];
    const ArgData d = make_argument(a, int(i), in.elements[i], in.fill_values[i], options.seed);
    UserArgument w;
    w.name = a.name;
    w.kind = a.is_scalar     ? UserArgKind::scalar
             : a.is_constant ? UserArgKind::constant
                             : UserArgKind::buffer;
    w.elem = elem_name(a.type);
    w.bytes = int64_t(d.bytes.size());
    w.is_output = a.is_output && !a.is_scalar && !a.is_constant;
    w.tolerance = w.is_output ? output_tolerance(spec, a.type) : 0.0;
    u.arguments.push_back(std::move(w));
    append(out.blob, d.bytes);
  }
  if (!options.check) {
    // Nothing to compare with: every argument is an input and no reference runs.
    for (UserArgument& a : u.arguments) a.is_output = false;
    u.expected_in_blob = true;
  } else if (ref.kind == SpecReference::Kind::output_file) {
    u.expected_in_blob = true;
    for (size_t i = 0; i < spec.arguments.size(); ++i)
      if (u.arguments[i].is_output)
        append(out.blob, read_raw(ref.output_file, spec.arguments[i].type, in.elements[i],
                                  "Reference.OutputFile")
                             .bytes);
  } else {
    if (auto why = SpecTask::launch_violation(in, device))
      throw SpecError("the reference configuration cannot launch: " + *why);
    std::string name, file;
    if (ref.kind == SpecReference::Kind::kernel) {
      name = ref.kernel_name;
      if (ref.kernel_file != spec.kernel_file)
        file = read_file(ref.kernel_file, "Reference.KernelFile");
    }
    const CudaSource source = task.nvrtc_source(in, name, file);
    const CompileResult c = builder.compile(source);
    if (!c.ok())
      throw SpecError(fmt::format("the reference ({}) does not compile: {}", source.kernel_name,
                                  first_line(c.log)));
    u.reference_kernel = c.kernel_name;
    u.reference_launch = in.launch;
    u.reference_args = kernel_arg_indices(spec);
    u.reference_cubin_bytes = int64_t(c.cubin.size());
    out.blob.insert(out.blob.end(), c.cubin.begin(), c.cubin.end());
  }
  t.user = std::move(u);
  return out;
}

SpecCandidate spec_candidate(const SpecTask& task, const SpecInstance& reference,
                             const SpecInstance& in, const CompileResult& compiled,
                             const DeviceInfo& device, bool check) {
  SpecCandidate out;
  MeasureResult& r = out.result;
  r.compile_s = compiled.seconds;
  if (in.elements != reference.elements || in.fill_values != reference.fill_values) {
    r.status = MeasureStatus::invalid;
    r.error =
        "the arguments' sizes or fill values depend on the parameters; they are allocated once "
        "per task, from the reference configuration";
    return out;
  }
  if (!compiled.ok()) {
    r.status = MeasureStatus::compile_error;
    r.error = first_line(compiled.log);
    return out;
  }
  const PtxasInfo& p = compiled.ptxas;
  r.extra = {{"registers", p.registers},
             {"spill_bytes", p.spill_store_bytes + p.spill_load_bytes},
             {"static_smem_bytes", p.shared_bytes}};
  const int64_t threads = int64_t(in.launch.block.volume());
  if (p.parsed && int64_t(p.registers) * threads > device.regs_per_block) {
    r.status = MeasureStatus::invalid;
    r.error = fmt::format("{} registers x {} threads exceed the {} registers of a block",
                          p.registers, threads, device.regs_per_block);
    return out;
  }
  const int64_t smem = int64_t(p.shared_bytes) + in.launch.dynamic_smem_bytes;
  if (smem > std::max(device.max_shared_per_block_optin, device.max_shared_per_block)) {
    r.status = MeasureStatus::invalid;
    r.error = fmt::format("{} bytes of shared memory exceed the {} a block may have", smem,
                          device.max_shared_per_block_optin);
    return out;
  }
  out.runnable = true;
  MeasureRequest& q = out.request;
  q.kernel_name = compiled.kernel_name;
  q.launch = in.launch;
  q.launch.static_smem_bytes = p.shared_bytes;
  q.cubin = compiled.cubin;
  q.args = kernel_arg_indices(task.spec());
  q.check = check;
  return out;
}

TaskKey spec_task_key(const SpecTask& task, const std::string& arch, const std::string& device) {
  const KernelSpec& s = task.spec();
  TaskKey key;
  key.op = "spec";
  key.shape = s.problem_size;
  key.target_arch = arch;
  key.device_name = device;
  key.template_name = s.benchmark_name.empty() ? s.kernel_name : s.benchmark_name;
  for (const SpecArgument& a : s.arguments)
    if (a.is_output) key.dtype = elem_name(a.type);
  return key;
}

std::unique_ptr<Measurer> make_spec_measurer(const SpecTask& task,
                                             const GpuMeasureOptions& options) {
  const DeviceInfo device = measuring_device(options);
  task.source();  // a missing kernel file is the user's error, before any worker starts
  return std::make_unique<SpecMeasurer>(task, options, device);
}

}  // namespace cutune::spec
