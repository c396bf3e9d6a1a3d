#include "src/measure/emulated_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "src/codegen/launch_grid.h"
#include "src/lower/lower.h"
#include "src/measure/correctness.h"
#include "src/measure/template_task.h"

namespace cutune {

float round_to_storage(float value, ir::DType storage) {
  if (storage != ir::DType::Float16 && storage != ir::DType::BFloat16) return value;
  return round_to_storage(value, storage_dtype(storage));
}

EmulatedCheck check_source_in_emulator(const Template& tmpl, const CudaSource& source,
                                       emu::Emulator& emulator, std::optional<double> tolerance,
                                       uint64_t seed) {
  const std::vector<TensorSpec> specs = tmpl.tensors();
  std::vector<std::vector<float>> host(specs.size());
  std::vector<emu::HostBuffer> buffers(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string dtype = storage_dtype(specs[i].type.dtype);
    if (specs[i].is_output && !specs[i].initial) {
      const float start = specs[i].zero_init ? 0.0f : std::numeric_limits<float>::quiet_NaN();
      host[i].assign(size_t(specs[i].elements), start);
    } else {
      host[i] = input_values(seed, int(i), specs[i].elements, dtype);
    }
    const std::vector<char> bytes = encode_values(host[i], dtype);
    buffers[i].type = specs[i].type;
    buffers[i].bytes.resize(bytes.size());
    std::memcpy(buffers[i].bytes.data(), bytes.data(), bytes.size());
  }

  // The scalar parameters in the kernel's order, with the values the template checks with; a
  // run-time-M kernel (lowered at any M) runs at this task's M: its grid and the sizes of A and
  // C follow M by launch_grid.h's rule, and M is its scalar.
  const std::optional<int64_t> m = tmpl.runtime_m();
  const std::vector<ScalarSpec> values = tmpl.scalars();
  std::vector<emu::ScalarArg> scalars;
  for (const KernelParam& param : source.params) {
    if (param.is_pointer || param.tensor_map) continue;
    if (m && param.name == kRuntimeMArgument) {
      scalars.push_back(emu::ScalarArg::i32(int32_t(*m)));
      continue;
    }
    auto v = std::find_if(values.begin(), values.end(),
                          [&](const ScalarSpec& s) { return s.name == param.name; });
    CUTUNE_CHECK(v != values.end() && v->type == ir::Type::f32(),
                 "kernel scalar " + param.name + " is not a Float32 scalar of the template");
    scalars.push_back(emu::ScalarArg::f32(float(v->value)));
  }

  EmulatedCheck out;
  emu::EmuResult r = emulator.run(m ? at_m(source, *m) : source, buffers, scalars);
  out.compile_seconds = r.compile_seconds;
  out.run_seconds = r.run_seconds;
  out.status = emu::to_string(r.status);
  out.uninitialised_reads = r.uninitialised_reads;
  if (r.status != emu::EmuStatus::ok) {
    out.max_rel_error = std::numeric_limits<double>::infinity();
    std::string msg = r.message;
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg = msg.substr(0, nl);
    out.message = msg;
    return out;
  }

  std::vector<std::vector<float>> expected = host;
  tmpl.reference(expected);
  out.passed = true;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].is_output) continue;
    const std::string dtype = storage_dtype(specs[i].type.dtype);
    const double tol = tolerance ? *tolerance : error_tolerance(dtype, tmpl.reduction_length());
    out.tolerance = std::max(out.tolerance, tol);
    const std::vector<float> got = decode_values(
        reinterpret_cast<const char*>(buffers[i].bytes.data()), specs[i].elements, dtype);
    const CompareResult c = compare_outputs(got.data(), expected[i].data(), specs[i].elements);
    out.max_rel_error = std::max(out.max_rel_error, c.max_rel_error);
    if (!c.ok(tol) && out.passed) {
      out.passed = false;
      out.status = "wrong_answer";
      out.message = fmt::format("{}: {}", specs[i].name, c.describe(tol));
    }
  }
  return out;
}

EmulatedCheck check_in_emulator(const Template& tmpl, const Config& config,
                                const ir::TargetLimits& limits, emu::Emulator& emulator,
                                std::optional<double> tolerance, uint64_t seed) {
  Lowered l = lower(tmpl, config, limits);
  if (!l.ok()) {
    EmulatedCheck out;
    out.status = "rejected";
    out.max_rel_error = std::numeric_limits<double>::infinity();
    out.message = l.verify.errors.empty() ? "rejected" : l.verify.errors.front();
    return out;
  }
  return check_source_in_emulator(tmpl, *l.source, emulator, tolerance, seed);
}

}  // namespace cutune
