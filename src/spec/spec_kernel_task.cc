#include "src/spec/spec_kernel_task.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "src/spec/spec_buffers.h"
#include "src/spec/spec_verify.h"

namespace cutune::spec {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

void append(std::vector<char>& blob, const std::vector<std::byte>& bytes) {
  const char* p = reinterpret_cast<const char*>(bytes.data());
  blob.insert(blob.end(), p, p + bytes.size());
}

// Kernel parameters are the spec's arguments, in order (constant-memory ones too).
std::vector<int> kernel_arg_indices(const KernelSpec& spec) {
  std::vector<int> out;
  for (size_t i = 0; i < spec.arguments.size(); ++i) out.push_back(int(i));
  return out;
}

std::string read_file(const std::filesystem::path& path, const std::string& field) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw SpecError(fmt::format("{}: no file '{}'", field, path.string()));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class SpecKernelTask final : public KernelTask {
 public:
  explicit SpecKernelTask(const SpecTask& task)
      : task_(task), reference_(task.instantiate(task.spec().reference.configuration)) {
    task.source();  // a missing kernel file is the user's error, before any worker starts
  }

  WorkerSetup worker_setup(const GpuMeasureOptions& options, NvrtcBuilder& builder,
                           const MeasuringTarget& target, bool /*with_baseline*/) const override {
    SpecWorkerTask t = spec_worker_task(task_, options, builder, target.device);
    return {std::move(t.task), std::move(t.blob)};
  }

  InstanceOrWhy instance(const Config& config, const MeasuringTarget& target) const override {
    if (auto why = task_.space().violation(config)) return {std::nullopt, "condition " + *why};
    try {
      return spec_kernel_instance(task_, reference_, task_.instantiate(config), target.device);
    } catch (const SpecError& e) {
      return {std::nullopt, e.what()};
    }
  }

 private:
  const SpecTask& task_;
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
  for (size_t i = 0; i < spec.arguments.size(); ++i) {
    const SpecArgument& a = spec.arguments[i];
    const ArgData d = make_argument(a, int(i), in.elements[i], in.fill_values[i], options.seed);
    WorkerArgument w;
    w.name = a.name;
    w.kind = a.is_scalar     ? ArgKind::scalar
             : a.is_constant ? ArgKind::constant
                             : ArgKind::buffer;
    w.elem = elem_name(a.type);
    w.elements = d.elements();
    w.init = ArgInit::blob;
    w.is_output = a.is_output && w.kind == ArgKind::buffer;
    w.tolerance = w.is_output ? output_tolerance(spec, a.type) : 0.0;
    t.arguments.push_back(std::move(w));
    append(out.blob, d.bytes);
  }
  if (!options.check) return out;  // nothing to compare with: no reference runs
  if (ref.kind == SpecReference::Kind::output_file) {
    t.reference = ReferenceKind::file;
    for (size_t i = 0; i < spec.arguments.size(); ++i) {
      if (!t.arguments[i].is_output) continue;
      const std::vector<float> expected =
          read_raw(ref.output_file, spec.arguments[i].type, in.elements[i], "Reference.OutputFile")
              .to_floats();
      const char* p = reinterpret_cast<const char*>(expected.data());
      out.blob.insert(out.blob.end(), p, p + expected.size() * sizeof(float));
    }
    return out;
  }
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
  t.reference = ReferenceKind::kernel;
  t.reference_kernel = c.kernel_name;
  t.reference_launch = in.launch;
  t.reference_args = kernel_arg_indices(spec);
  t.reference_cubin_bytes = int64_t(c.cubin.size());
  out.blob.insert(out.blob.end(), c.cubin.begin(), c.cubin.end());
  return out;
}

InstanceOrWhy spec_kernel_instance(const SpecTask& task, const SpecInstance& reference,
                                   const SpecInstance& in, const DeviceInfo& device) {
  if (auto why = SpecTask::launch_violation(in, device)) return {std::nullopt, *why};
  if (in.elements != reference.elements || in.fill_values != reference.fill_values)
    return {std::nullopt,
            "the arguments' sizes or fill values depend on the parameters; they are allocated "
            "once per task, from the reference configuration"};
  KernelInstance k;
  k.source = task.nvrtc_source(in);
  k.args = kernel_arg_indices(task.spec());
  return {std::move(k), ""};
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

std::unique_ptr<KernelTask> spec_kernel_task(const SpecTask& task) {
  return std::make_unique<SpecKernelTask>(task);
}

}  // namespace cutune::spec
