#include "src/cli/tune_task.h"

#include <fmt/format.h>

#include "src/cli/cmd_spec.h"
#include "src/distributed/suite_runner.h"
#include "src/measure/device_selection.h"
#include "src/measure/emulator_measurer.h"
#include "src/measure/gpu_measurer.h"
#include "src/measure/worker_process.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/spec/kernel_spec.h"
#include "src/spec/spec_kernel_task.h"
#include "src/target/device_info.h"
#include "src/tune/prior_margin.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/transfer_model.h"

namespace cutune::cli {

namespace {

// The GPU measurer of `measure` for `task`, with what to try instead where there is no GPU.
std::unique_ptr<Measurer> gpu_measurer(const MeasureChoice& measure, const std::string& arch,
                                       std::unique_ptr<KernelTask> task,
                                       const std::string& without_gpu) {
  GpuMeasureOptions gpu;
  gpu.arch = arch;
  gpu.devices = select_devices(measure.devices, list_devices(), arch);
  try {
    return make_gpu_measurer(std::move(task), gpu);
  } catch (const NoDeviceError& e) {
    throw NoDeviceError(fmt::format("{}; {}", e.what(), without_gpu));
  }
}

// The device a task's prior estimates for: the present GPU of its architecture, else the
// architecture's documented part.
DeviceInfo device_of(const TaskOptions& arch) {
  const std::string name = arch.resolved_arch();
  for (const DeviceInfo& d : list_devices()) {
    if (d.arch() == name) return d;
  }
  return target_limits(name);
}

void resolve_template(const TaskOptions& op, const MeasureChoice& measure, TuneTask& t) {
  if (op.op.empty() || op.shape.empty())
    throw UsageError("tune needs OP and --shape (or --spec SPEC.json, or --replay CACHE)");
  t.tmpl = op.make();
  t.flops = t.tmpl->flops();
  t.key.op = t.tmpl->op();  // the device and arch are bind()'s
  t.key.shape = t.tmpl->shape();
  t.key.template_name = t.tmpl->name();
  const Template& tmpl = *t.tmpl;
  if (t.emulated) {
    if (!measure.devices.empty())
      throw UsageError("--devices names GPUs; drop it with --device emulator");
    EmulatorMeasureOptions emulated;
    emulated.limits = op.limits();
    require_arch_supports(tmpl, emulated.limits.arch);
    t.make_measurer = [&tmpl, emulated](int) { return make_emulator_measurer(tmpl, emulated); };
    return;
  }
  const std::string hint =
      distributed::process_count() > 1
          ? "under mpirun without GPUs: --device emulator, or --replay CACHE..."
          : "to try the tuner without a GPU: cutune tune --replay CACHE (a Kernel Tuner cache)";
  t.make_measurer = [&tmpl, measure, arch = op.arch, hint](int) {
    std::unique_ptr<Measurer> m = gpu_measurer(measure, arch, template_kernel_task(tmpl), hint);
    require_arch_supports(tmpl, m->target_arch());
    return m;
  };
  // The model's search starts from what the template's author would try first.
  if (t.search.tuner == TunerKind::xgb) t.search.seed_configs = tmpl.reference_configs();
}

void resolve_spec(const TaskSource& source, const MeasureChoice& measure, TuneTask& t) {
  const TaskRequest r = source.op.request();
  if (!r.op.empty() || !source.op.shape.empty() || !r.template_name.empty() || !r.dtype.empty() ||
      !r.out_dtype.empty() || !r.layout.empty() || !r.family.empty() || !r.epilogue.empty())
    throw UsageError(
        "--spec names the kernel and its problem size; drop OP/--shape/--template/--dtype/"
        "--out-dtype/--layout/--family/--epilogue");
  if (t.emulated) throw UsageError("--device emulator measures operators; drop --spec");
  const std::string path = source.replay.spec;
  require_readable_file(path, "--spec");
  auto task = std::make_shared<const spec::SpecTask>(spec::load_kernel_spec(path));
  print_spec_warnings(task->spec());
  task->source();  // a missing kernel file is named before anything else
  t.spec = task;
  t.key = spec::spec_task_key(*task, "", "");
  t.make_measurer = [task, measure, arch = source.op.arch, path](int) {
    try {
      return gpu_measurer(measure, arch, spec::spec_kernel_task(*task),
                          fmt::format("without a GPU: cutune verify --spec {} (the emulator), or "
                                      "cutune tune --spec {} --replay CACHE (a Kernel Tuner "
                                      "cache of this kernel)",
                                      path, path));
    } catch (const WorkerError& e) {
      // The worker could not set the task up: the reference kernel failed on the GPU.
      throw UsageError(fmt::format("{}: {}", path, e.what()));
    }
  };
  // The user's own reference configuration first.
  if (t.search.tuner == TunerKind::xgb) t.search.seed_configs = task->seed_configs();
}

void resolve_replay(const TaskSource& source, const MeasureChoice& measure, TuneTask& t) {
  if (!source.op.op.empty() || !source.op.shape.empty())
    throw UsageError("--replay takes the operator and shape from the cache; drop OP/--shape");
  auto task = std::make_shared<const replay::ReplayTask>(source.replay.load());
  t.replay = task;
  const bool noise = source.replay.noise;
  const uint64_t seed = measure.noise_seed.value_or(t.search.seed);
  const double cost_ms = measure.replay_cost_ms;
  t.make_measurer = [task, noise, seed, cost_ms](int) -> std::unique_ptr<Measurer> {
    return std::make_unique<ReplayMeasurerAdapter>(*task, noise, seed, cost_ms);
  };
  t.bind("", "");  // the cache names its device
}

}  // namespace

const ConfigSpace& TuneTask::space() const {
  if (tmpl) return tmpl->space();
  if (spec) return spec->space();
  return replay->space();
}

void TuneTask::bind(const std::string& device_name, const std::string& target_arch) {
  if (replay) {
    key = replay_task_key(*replay);
  } else if (spec) {
    key = spec::spec_task_key(*spec, target_arch, device_name);
  } else {
    require_arch_supports(*tmpl, target_arch);
    key = {.op = tmpl->op(),
           .shape = tmpl->shape(),
           .target_arch = target_arch,
           .device_name = device_name,
           .template_name = tmpl->name()};
  }
  if (tmpl) {
    TaskOptions arch;
    arch.arch = target_arch;
    const ir::TargetLimits limits = arch.limits();
    features = cost_model::make_ir_features(*tmpl, limits);
    featurize = template_featurizer(*features, limits);
    search.model.prior = nullptr;
    if (search.tuner == TunerKind::xgb && search.prior) {
      search.model.prior =
          make_prior_margin(*features, device_of(arch), template_params(tmpl->name()).family);
    }
  } else {
    features = cost_model::make_knob_features(space());
    featurize = knob_featurizer(space(), *features);
  }
}

distributed::SuiteTask TuneTask::suite_task() const {
  return {.key = key,
          .space = &space(),
          .features = features.get(),
          .featurize = featurize,
          .flops = flops,
          .seed_configs = search.seed_configs};
}

std::string TuneTask::note() const {
  if (!emulated) return "";
  return "measuring in the CPU emulator: correctness only; its times are emulator wall times, "
         "not GPU times";
}

void TuneTask::report(nlohmann::json& out, const TuneSummary& summary) const {
  if (!replay) return;
  const double optimum_ms = replay->summary().best_time_ms;
  out["optimum_ms"] = optimum_ms;
  if (!summary.best) return;
  const double ratio = optimum_ms / replay->find(*summary.best)->time_ms;
  out["optimum_over_best"] = ratio;
  out["line"] = fmt::format(
      "optimum of the cache: {:.4g} ms; the best found runs at {:.1f}% of its speed", optimum_ms,
      100.0 * ratio);
}

TuneTask resolve_tune_task(const TaskSource& source, const MeasureChoice& measure,
                           SearchOptions search) {
  TuneTask t;
  t.emulated = measure.device == "emulator";
  t.search = std::move(search);
  t.search.remeasure_rounds = measure.remeasure_rounds;
  if (!source.replay.cache.empty()) {
    resolve_replay(source, measure, t);
  } else if (!source.replay.spec.empty()) {
    resolve_spec(source, measure, t);
  } else {
    resolve_template(source.op, measure, t);
  }
  const bool gpu = !t.replay && !t.emulated;
  t.search.remeasure_top = measure.remeasure_top >= 0 ? measure.remeasure_top : gpu ? 8 : 0;
  t.search.pipeline = gpu && !measure.no_pipeline;
  if (!gpu) t.search.seed_configs.clear();
  return t;
}

TuneTask resolve_tune_task(const TuneArgs& args) {
  return resolve_tune_task(args.source, args.measure, args.search.options());
}

}  // namespace cutune::cli
