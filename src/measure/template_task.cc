#include "src/measure/template_task.h"

#include <algorithm>

#include <fmt/format.h>

#include "src/lower/lower.h"
#include "src/measure/correctness.h"

namespace cutune {

namespace {

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
}

class TemplateKernelTask final : public KernelTask {
 public:
  explicit TemplateKernelTask(const Template& tmpl)
      : tmpl_(tmpl), tensors_(tmpl.tensors()), scalars_(tmpl.scalars()) {}

  WorkerSetup worker_setup(const GpuMeasureOptions& options, NvrtcBuilder& /*builder*/,
                           const MeasuringTarget& /*target*/, bool with_baseline) const override {
    WorkerSetup setup;
    setup.task = worker_task(tmpl_, options, &setup.blob, with_baseline);
    return setup;
  }

  InstanceOrWhy instance(const Config& config, const MeasuringTarget& target) const override {
    InstanceOrWhy out;
    Lowered lowered = lower(tmpl_, config, target.limits);
    if (!lowered.ok()) {
      out.why = join(lowered.verify.errors);
      return out;
    }
    KernelInstance in;
    in.source = std::move(*lowered.source);
    out.why = bind_kernel_arguments(in.source, tensors_, in, scalars_,
                                    tmpl_.runtime_m().has_value());
    if (out.why.empty()) out.instance = std::move(in);
    return out;
  }

 private:
  const Template& tmpl_;
  std::vector<TensorSpec> tensors_;
  std::vector<ScalarSpec> scalars_;
};

}  // namespace

std::string bind_kernel_arguments(const CudaSource& source, const std::vector<TensorSpec>& tensors,
                                  KernelInstance& instance,
                                  const std::vector<ScalarSpec>& scalars, bool runtime_m) {
  instance.args.clear();
  instance.maps.clear();
  for (const KernelParam& param : source.params) {
    if (runtime_m && !param.is_pointer && !param.tensor_map && param.name == kRuntimeMArgument) {
      // worker_task's argument after the tensors and the template's scalars
      instance.args.push_back(int(tensors.size() + scalars.size()));
      continue;
    }
    if (!param.is_pointer && !param.tensor_map) {
      auto s = std::find_if(scalars.begin(), scalars.end(),
                            [&](const ScalarSpec& x) { return x.name == param.name; });
      if (s == scalars.end() || !(s->type == param.type))
        return fmt::format("kernel parameter '{}' is not one of the template's scalars", param.name);
      instance.args.push_back(int(tensors.size() + size_t(s - scalars.begin())));
      continue;
    }
    // A tensor map is encoded by the worker over the tensor it describes.
    const std::string& tensor = param.tensor_map ? param.tensor_map->buffer : param.name;
    auto it = std::find_if(tensors.begin(), tensors.end(),
                           [&](const TensorSpec& t) { return t.name == tensor; });
    if (param.tensor_map && it != tensors.end()) {
      instance.maps.resize(source.params.size());
      instance.maps[instance.args.size()] = *param.tensor_map;
    } else if (!param.is_pointer || it == tensors.end()) {
      return fmt::format("kernel parameter '{}' is not one of the template's tensors", param.name);
    }
    instance.args.push_back(int(it - tensors.begin()));
  }
  return "";
}

WorkerTask worker_task(const Template& tmpl, const GpuMeasureOptions& options,
                       std::vector<char>* expected, bool allow_baseline) {
  WorkerTask task;
  task.device = options.device;
  task.seed = options.seed;
  task.timing = timing_options(options);
  const std::vector<TensorSpec> tensors = tmpl.tensors();
  for (const TensorSpec& t : tensors) {
    WorkerArgument a;
    a.name = t.name;
    a.elem = storage_dtype(t.type.dtype);
    a.elements = t.elements;
    a.is_output = t.is_output;
    // Inputs from the seed; outputs start as NaN, so an element never written fails, except
    // a split-K output, which the kernel adds into: zero before the check and every timed run;
    // and an output the kernel reads (C with beta): from the seed, restored likewise.
    a.init = !t.is_output || t.initial ? ArgInit::seeded
             : t.zero_init             ? ArgInit::zero
                                       : ArgInit::nan;
    a.reset_each_run = t.zero_init || t.initial;
    if (t.is_output) a.tolerance = error_tolerance(a.elem, tmpl.reduction_length());
    task.arguments.push_back(std::move(a));
  }
  // Scalars by value, their bytes at the blob's start (the blob's arguments come first).
  expected->clear();
  for (const ScalarSpec& s : tmpl.scalars()) {
    CUTUNE_CHECK(s.type == ir::Type::f32(), "template scalar " + s.name + " is not Float32");
    WorkerArgument a;
    a.name = s.name;
    a.kind = ArgKind::scalar;
    a.elem = "float32";
    a.elements = 1;
    a.init = ArgInit::blob;
    task.arguments.push_back(std::move(a));
    const float v = float(s.value);
    const char* bytes = reinterpret_cast<const char*>(&v);
    expected->insert(expected->end(), bytes, bytes + sizeof v);
  }
  if (const std::optional<int64_t> m = tmpl.runtime_m()) {
    // A run-time M travels as a scalar argument after the tensors (whose seeds keep their
    // indices) and the template's scalars, its bytes after theirs in the blob.
    WorkerArgument a;
    a.name = kRuntimeMArgument;
    a.kind = ArgKind::scalar;
    a.elem = "int32";
    a.elements = 1;
    a.init = ArgInit::blob;
    task.arguments.push_back(std::move(a));
    const int32_t value = int32_t(*m);
    const char* bytes = reinterpret_cast<const char*>(&value);
    expected->insert(expected->end(), bytes, bytes + sizeof value);
  }
  // A fused epilogue's cuBLASLt baseline (the same epilogue in the library) is not in yet: such
  // a task has none rather than one that computes less.
  const BaselineSpec baseline = tmpl.baseline();
  if (allow_baseline &&
      !(baseline.kind == BaselineSpec::Kind::gemm && !baseline.gemm.epilogue.empty()))
    task.baseline = baseline;
  if (!options.check) return task;

  if (task.baseline.kind == BaselineSpec::Kind::gemm && task.baseline.gemm.epilogue.empty()) {
    // cuBLAS computes the reference on the GPU: a CPU GEMM of 4096³ would take minutes.
    task.reference = ReferenceKind::baseline;
    return task;
  }
  task.reference = ReferenceKind::host;
  std::vector<std::vector<float>> values;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const WorkerArgument& a = task.arguments[i];
    values.push_back(a.is_output && !tensors[i].initial
                         ? std::vector<float>(size_t(a.elements), 0.0f)
                         : input_values(options.seed, int(i), a.elements, a.elem));
  }
  tmpl.reference(values);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].is_output) continue;
    const char* bytes = reinterpret_cast<const char*>(values[i].data());
    expected->insert(expected->end(), bytes, bytes + values[i].size() * sizeof(float));
  }
  return task;
}

std::unique_ptr<KernelTask> template_kernel_task(const Template& tmpl) {
  return std::make_unique<TemplateKernelTask>(tmpl);
}

}  // namespace cutune
