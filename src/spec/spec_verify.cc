#include "src/spec/spec_verify.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "src/measure/correctness.h"
#include "src/runtime/nvrtc_builder.h"

namespace cutune::spec {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

}  // namespace

std::string not_emulated_reason(const std::string& raw_log) {
  // In a UTF-8 locale g++ quotes names with U+2018 / U+2019.
  std::string log = raw_log;
  for (const char* quote : {"\u2018", "\u2019"})
    for (size_t at; (at = log.find(quote)) != std::string::npos;)
      log.replace(at, std::strlen(quote), "'");
  // g++'s wording; the location is "file:line:col: error: ...".
  static const std::regex kUndeclared(
      R"(([^\s:]+):(\d+):\d+: error: '([^']+)' was not declared in this scope)");
  static const std::regex kNoHeader(R"(fatal error: ([^:]+): No such file or directory)");
  static const std::regex kNoType(R"(([^\s:]+):(\d+):\d+: error: '([^']+)' does not name a type)");
  static const std::regex kNoMatch(
      R"(([^\s:]+):(\d+):\d+: error: no matching function for call to '([^(']+))");
  static const std::regex kAnyError(R"(([^\s:]+):(\d+):\d+: error: ([^\n]*))");
  std::smatch m;
  if (std::regex_search(log, m, kNoHeader))
    return fmt::format("not emulated: #include <{}>", m[1].str());
  if (std::regex_search(log, m, kUndeclared))
    return fmt::format("not emulated: '{}' ({}:{})", m[3].str(), m[1].str(), m[2].str());
  if (std::regex_search(log, m, kNoType))
    return fmt::format("not emulated: type '{}' ({}:{})", m[3].str(), m[1].str(), m[2].str());
  if (std::regex_search(log, m, kNoMatch))
    return fmt::format("not emulated: {} with these argument types ({}:{})", m[3].str(), m[1].str(),
                       m[2].str());
  if (std::regex_search(log, m, kAnyError))
    return fmt::format("not emulated: the host compiler says '{}' ({}:{})", first_line(m[3].str()),
                       m[1].str(), m[2].str());
  return "not emulated: " + first_line(log);
}

double output_tolerance(const KernelSpec& spec, ElemType type) {
  if (spec.tolerance) return *spec.tolerance;
  constexpr int64_t kReduction = 4096;
  switch (type) {
    case ElemType::f16:
      return error_tolerance("float16", kReduction);
    case ElemType::bf16:
      return error_tolerance("bfloat16", kReduction);
    case ElemType::f32:
    case ElemType::f64:
      return error_tolerance("float32", kReduction);
    default:
      return 0;
  }
}

SpecVerifier::SpecVerifier(const SpecTask& task, emu::Emulator& emulator, DeviceInfo device,
                           uint64_t seed)
    : task_(task), emulator_(emulator), device_(std::move(device)), seed_(seed) {}

SpecVerifier::Run SpecVerifier::run_instance(const SpecInstance& in, const CudaSource& source,
                                             const std::string& kernel_name) {
  const KernelSpec& spec = task_.spec();
  Run out;
  std::vector<emu::HostBuffer> buffers;
  std::vector<emu::ScalarArg> scalars;
  std::vector<ArgData> data;
  for (size_t i = 0; i < spec.arguments.size(); ++i)
    data.push_back(make_argument(spec.arguments[i], static_cast<int>(i), in.elements[i],
                                 in.fill_values[i], seed_));
  for (size_t i = 0; i < spec.arguments.size(); ++i) {
    if (spec.arguments[i].is_scalar) {
      emu::ScalarArg s;
      s.type = storage_type(data[i].type);
      std::memcpy(s.bits.data(), data[i].bytes.data(), data[i].bytes.size());
      scalars.push_back(s);
    } else {
      emu::HostBuffer b;
      b.type = storage_type(data[i].type);
      b.bytes = data[i].bytes;
      buffers.push_back(std::move(b));
    }
  }
  emu::EmuResult r = emulator_.run(source, buffers, scalars);
  out.check.compile_seconds = r.compile_seconds;
  out.check.run_seconds = r.run_seconds;
  out.check.max_rel_error = kInf;
  if (r.status == emu::EmuStatus::compile_error) {
    // NVRTC decides whether the kernel is broken or only beyond the emulator.
    NvrtcBuilder nvrtc(BuildOptions{device_.arch()});
    CompileResult c = nvrtc.compile(task_.nvrtc_source(in));
    if (!c.ok()) {
      out.check.status = "compile_error";
      out.check.message = first_line(c.log);
    } else {
      out.check.status = "not_emulated";
      out.check.message = not_emulated_reason(r.message);
    }
    return out;
  }
  if (r.status != emu::EmuStatus::ok) {
    out.check.status = emu::to_string(r.status);
    out.check.message = first_line(r.message);
    // The emulator names the entry that calls the user's kernel; the user knows the kernel.
    if (out.check.message.starts_with(source.kernel_name + ":"))
      out.check.message.replace(0, source.kernel_name.size(), kernel_name);
    return out;
  }
  out.check.status = "ok";
  out.check.uninitialised_reads = r.uninitialised_reads;
  size_t next_buffer = 0;
  for (size_t i = 0; i < spec.arguments.size(); ++i) {
    if (spec.arguments[i].is_scalar) continue;
    if (spec.arguments[i].is_output) {
      ArgData d;
      d.type = data[i].type;
      d.bytes = std::move(buffers[next_buffer].bytes);
      out.outputs.push_back(std::move(d));
    }
    ++next_buffer;
  }
  return out;
}

const std::optional<std::vector<ArgData>>& SpecVerifier::reference() {
  if (reference_done_) return reference_;
  reference_done_ = true;
  const KernelSpec& spec = task_.spec();
  const SpecReference& ref = spec.reference;
  try {
    if (ref.kind == SpecReference::Kind::output_file) {
      SpecInstance in = task_.instantiate(ref.configuration);
      for (size_t i = 0; i < spec.arguments.size(); ++i) {
        if (!spec.arguments[i].is_output) continue;
        reference_ = std::vector<ArgData>{read_raw(ref.output_file, spec.arguments[i].type,
                                                   in.elements[i], "Reference.OutputFile")};
      }
      return reference_;
    }
    SpecInstance in = task_.instantiate(ref.configuration);
    if (auto why = SpecTask::launch_violation(in, device_)) {
      reference_error_ = "the reference configuration cannot launch: " + *why;
      return reference_;
    }
    std::string file_source;
    if (ref.kind == SpecReference::Kind::kernel && ref.kernel_file != spec.kernel_file) {
      std::ifstream f(ref.kernel_file, std::ios::binary);
      if (!f)
        throw SpecError(
            fmt::format("Reference.KernelFile: no file '{}'", ref.kernel_file.string()));
      std::stringstream s;
      s << f.rdbuf();
      file_source = s.str();
    }
    const CudaSource source = task_.emulator_source(
        in, ref.kind == SpecReference::Kind::kernel ? ref.kernel_name : std::string(), file_source);
    Run r = run_instance(
        in, source, ref.kind == SpecReference::Kind::kernel ? ref.kernel_name : spec.kernel_name);
    if (r.check.status != "ok") {
      reference_error_ =
          fmt::format("the reference failed: {}: {}", r.check.status, r.check.message);
      reference_check_ = r.check;
      return reference_;
    }
    reference_ = std::move(r.outputs);
  } catch (const SpecError& e) {
    reference_error_ = fmt::format("the reference failed: {}", e.what());
  }
  return reference_;
}

SpecCheck SpecVerifier::check(const Config& config) {
  SpecCheck out;
  out.max_rel_error = kInf;
  const ConfigSpace& space = task_.space();
  if (auto why = space.violation(config)) {
    out.status = "rejected";
    out.message = "condition " + *why;
    return out;
  }
  SpecInstance in;
  try {
    in = task_.instantiate(config);
  } catch (const SpecError& e) {
    out.status = "rejected";
    out.message = e.what();
    return out;
  }
  if (auto why = SpecTask::launch_violation(in, device_)) {
    out.status = "rejected";
    out.message = *why;
    return out;
  }
  const auto& expected = reference();
  if (!expected) {
    out.status = "reference_failed";
    out.message = reference_error_;
    return out;
  }
  Run r = run_instance(in, task_.emulator_source(in), task_.spec().kernel_name);
  if (r.check.status != "ok") return r.check;
  out = r.check;
  out.max_rel_error = 0;
  const KernelSpec& spec = task_.spec();
  size_t k = 0;
  out.passed = true;
  for (size_t i = 0; i < spec.arguments.size(); ++i) {
    if (!spec.arguments[i].is_output) continue;
    const ArgData& got = r.outputs[k];
    const ArgData& want = (*expected)[k];
    ++k;
    if (got.bytes.size() != want.bytes.size()) {
      out.passed = false;
      out.status = "mismatch";
      out.message = fmt::format("output '{}' has {} elements, the reference {}",
                                spec.arguments[i].name, got.elements(), want.elements());
      out.max_rel_error = kInf;
      return out;
    }
    const std::vector<float> a = got.to_floats(), e = want.to_floats();
    const CompareResult c = compare_outputs(a.data(), e.data(), static_cast<int64_t>(a.size()));
    const double tol = output_tolerance(spec, got.type);
    out.tolerance = std::max(out.tolerance, tol);
    out.max_rel_error = std::max(out.max_rel_error, c.nonfinite > 0 ? kInf : c.max_rel_error);
    if (!c.ok(tol) && out.passed) {
      out.passed = false;
      out.status = "mismatch";
      out.message = fmt::format("output '{}': {}", spec.arguments[i].name, c.describe(tol));
    }
  }
  return out;
}

}  // namespace cutune::spec
