// What the --spec forms of verify and bench check against: the reference configuration, and
// whether a configuration's arguments fit where they are to be allocated.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/cli/cmd_spec.h"
#include "src/spec/spec_task.h"
#include "src/spec/spec_verify.h"

namespace cutune::cli::spec_form {

// A configuration that cannot be instantiated is left to the checks that report it.
void require_fits(const spec::SpecTask& task, const SpecOptions& opts, const Config& c,
                  double limit, const char* where) {
  spec::SpecInstance in;
  try {
    in = task.instantiate(c);
  } catch (const spec::SpecError&) {
    return;
  }
  double total = 0, largest = -1;
  std::string what;
  for (size_t i = 0; i < in.elements.size(); ++i) {
    const auto& a = task.spec().arguments[i];
    if (a.is_scalar) continue;
    const double bytes = double(in.elements[i]) * spec::elem_bytes(a.type);
    total += bytes;
    if (bytes > largest) {
      largest = bytes;
      what = fmt::format("'{}': {} x {}", a.name, in.elements[i], spec::elem_name(a.type));
    }
  }
  if (total <= limit) return;
  throw UsageError(fmt::format(
      "{}: configuration {} needs {:.3g} GiB of arguments ({}), more than {} takes ({:.3g} "
      "GiB); give a smaller {}",
      opts.spec_path, c.index(), total / (1 << 30), what, where, limit / (1 << 30),
      opts.problem_size.empty() ? "ProblemSize or --problem-size" : "--problem-size"));
}

Config reference_config(const spec::SpecTask& task) {
  const spec::KernelSpec& s = task.spec();
  const Config c =
      task.config_of(s.reference.configuration.empty() ? s.defaults() : s.reference.configuration);
  if (auto why = task.space().violation(c))
    throw UsageError(fmt::format(
        "the reference configuration ({}) violates the condition {}; give the spec a "
        "Reference.Configuration (or Defaults) that satisfies its conditions",
        c.to_string(), *why));
  return c;
}

ReferenceText describe_reference(const spec::SpecTask& task, const Config& reference) {
  const spec::KernelSpec& s = task.spec();
  const spec::SpecReference& r = s.reference;
  ReferenceText out;
  out.json = {{"configuration", reference.to_json()}};
  switch (r.kind) {
    case spec::SpecReference::Kind::configuration:
      out.json["kind"] = "configuration";
      out.line = fmt::format("reference: {} at {} ({})", s.kernel_name, reference.to_string(),
                             r.configuration == s.defaults() ? "the parameters' Defaults"
                                                             : "Reference.Configuration");
      break;
    case spec::SpecReference::Kind::kernel:
      out.json["kind"] = "kernel";
      out.json["kernel"] = r.kernel_name;
      out.line = fmt::format("reference: kernel {} launched as {}", r.kernel_name,
                             reference.to_string());
      break;
    case spec::SpecReference::Kind::output_file:
      out.json["kind"] = "output_file";
      out.json["file"] = r.output_file.string();
      out.line = fmt::format("reference: the outputs in {}", r.output_file.string());
      break;
  }
  std::vector<std::string> tolerances;
  nlohmann::json tol = nlohmann::json::object();
  for (const auto& a : s.arguments) {
    if (!a.is_output) continue;
    const double t = spec::output_tolerance(s, a.type);
    tol[a.name] = t;
    tolerances.push_back(fmt::format("{} {:.3g}", a.name, t));
  }
  out.json["tolerance"] = tol;
  out.json["tolerance_source"] =
      s.tolerance ? "the spec's Tolerance" : "by output type, over a reduction of 4096";
  out.line += fmt::format("; tolerance {} ({})", fmt::join(tolerances, ", "),
                          out.json["tolerance_source"].get<std::string>());
  return out;
}

}  // namespace cutune::cli::spec_form
