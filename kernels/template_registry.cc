// The registry of template families and how a request picks one of their combinations.

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/epilogue.h"
#include "kernels/template.h"

namespace cutune {

namespace {

// Function-local, so that registrars in other files find it constructed whatever the order of
// static initialisation.
std::vector<TemplateFamily>& registry() {
  static std::vector<TemplateFamily> families;
  return families;
}

bool supports_dtype(const TemplateFamily& f, const std::string& dtype) {
  return std::any_of(f.supported.begin(), f.supported.end(),
                     [&](const TaskParams& p) { return p.dtype == dtype; });
}

// sm_90a is sm_90 with its architecture-specific instructions.
bool same_arch(const std::string& target, const std::string& native) {
  return !native.empty() && (target == native || target == native + "a");
}

// The families in the order the hardware gained them, then any other by name.
int family_rank(const std::string& family) {
  static const std::vector<std::string> kOrder = {"simt", "mma", "wgmma"};
  return int(std::find(kOrder.begin(), kOrder.end(), family) - kOrder.begin());
}

std::vector<std::string> computations() {
  std::vector<std::string> out;
  for (const TemplateFamily* f : template_families())
    if (out.empty() || out.back() != f->computation) out.push_back(f->computation);
  return out;
}

// The computation an operator name stands for, and the dtype it fixes (empty for a computation).
struct OperatorRef {
  std::string computation, dtype;
};

OperatorRef operator_ref(const std::string& op) {
  std::vector<std::string> dtyped;
  for (const TemplateFamily* f : template_families()) {
    if (f->computation == op) return {op, ""};
    for (const TaskParams& p : f->supported) {
      const std::string name = operator_name(p);
      if (name == op) return {p.computation, p.dtype};
      if (name != p.computation && std::find(dtyped.begin(), dtyped.end(), name) == dtyped.end())
        dtyped.push_back(name);
    }
  }
  throw TaskError(fmt::format("unknown operator '{}' (known: {}; and with their dtype: {})", op,
                              fmt::join(computations(), ", "), fmt::join(dtyped, ", ")));
}

// "alpha,gelu_tanh" for a template name's suffix "alpha_gelu_tanh": the ops joined by '_',
// gelu_tanh the one op with '_' in its name.
std::string epilogue_of_suffix(const std::string& suffix) {
  std::string out;
  size_t pos = 0;
  while (pos <= suffix.size()) {
    size_t end = suffix.find('_', pos);
    if (end == std::string::npos) end = suffix.size();
    std::string word = suffix.substr(pos, end - pos);
    if (word == "tanh" && out.size() >= 4 && out.compare(out.size() - 4, 4, "gelu") == 0)
      out += "_tanh";
    else
      out += (out.empty() ? "" : ",") + word;
    pos = end + 1;
  }
  return out;
}

std::optional<TaskParams> find_template(const std::string& name) {
  // A run-time M's template is its exact-shape template's name with _dynm (template.h).
  const std::string suffix = "_dynm";
  if (name.size() > suffix.size() && name.ends_with(suffix)) {
    std::optional<TaskParams> p = find_template(name.substr(0, name.size() - suffix.size()));
    if (p && !p->runtime_m) {
      p->runtime_m = true;
      return p;
    }
    return std::nullopt;
  }
  // A name with an epilogue is its base name's combination with the epilogue, written in its
  // canonical order.
  if (size_t at = name.find("_ep_"); at != std::string::npos) {
    std::optional<TaskParams> p = find_template(name.substr(0, at));
    if (!p || !p->epilogue.empty()) return std::nullopt;
    try {
      p->epilogue = canonical_epilogue(epilogue_of_suffix(name.substr(at + 4)));
    } catch (const TaskError&) {
      return std::nullopt;
    }
    if (template_name(*p) != name) return std::nullopt;
    return p;
  }
  for (const TemplateAlias& a : template_aliases())
    if (a.name == name) return a.params;
  for (const TemplateFamily* f : template_families()) {
    for (const TaskParams& p : f->supported)
      if (template_name(p) == name) return p;
  }
  return std::nullopt;
}

// The family of `p`'s combination, whatever its epilogue (checked apart: epilogue_error) and
// run-time M (each family's `supported` lists the exact-shape combinations).
const TemplateFamily* find_family(const TaskParams& p) {
  TaskParams bare = p;
  bare.epilogue.clear();
  bare.runtime_m = false;
  for (const TemplateFamily* f : template_families()) {
    if (f->computation == p.computation && f->family == p.family &&
        std::find(f->supported.begin(), f->supported.end(), bare) != f->supported.end())
      return f;
  }
  return nullptr;
}

// TaskError where `f` takes no epilogue and `p` has one.
void check_epilogue(const TemplateFamily& f, const TaskParams& p) {
  if (p.epilogue.empty() || f.epilogue) return;
  throw TaskError(fmt::format("{} on {} takes no fused epilogue (--epilogue {})", p.computation,
                              f.family, p.epilogue));
}

// "dtype fp16, layout nt" for the fields of `p` that `given` sets.
std::string described(const TaskParams& p, const TaskParams& given) {
  std::vector<std::string> parts;
  auto add = [&](const char* what, const std::string& g, const std::string& v) {
    if (!g.empty()) parts.push_back(fmt::format("{} {}", what, v));
  };
  add("dtype", given.dtype, p.dtype);
  add("out-dtype", given.out_dtype, p.out_dtype);
  add("layout", given.layout, p.layout);
  add("family", given.family, p.family);
  add("epilogue", given.epilogue, p.epilogue);
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The supported combinations of `computation` (of `dtype` where not empty), as
// "dtype/out-dtype/layout/family".
std::string supported(const std::string& computation, const std::string& dtype) {
  std::vector<std::string> out;
  for (const TemplateFamily* f : template_families()) {
    for (const TaskParams& p : f->supported) {
      if (p.computation != computation || (!dtype.empty() && p.dtype != dtype)) continue;
      out.push_back(fmt::format("{}/{}/{}/{}", p.dtype, p.out_dtype, p.layout, p.family));
    }
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

FamilyRegistrar::FamilyRegistrar(TemplateFamily family) {
  const std::string id = family.computation + "/" + family.family;
  CUTUNE_CHECK(!family.computation.empty() && !family.family.empty() &&
                   !family.shape_help.empty() && !family.description.empty() && family.make &&
                   !family.supported.empty(),
               "template family " + id + " registered incomplete");
  for (const TaskParams& p : family.supported) {
    CUTUNE_CHECK(p.computation == family.computation && p.family == family.family &&
                     !p.dtype.empty() && !p.out_dtype.empty() && !p.layout.empty(),
                 "template family " + id + " supports " + template_name(p));
  }
  for (const TemplateFamily& other : registry()) {
    if (other.computation != family.computation) continue;
    CUTUNE_CHECK(other.family != family.family, "template family " + id + " registered twice");
    CUTUNE_CHECK(other.shape_help == family.shape_help,
                 id + ": another shape than " + other.family + "'s");
    // One default per dtype and architecture.
    for (const TaskParams& p : family.supported) {
      CUTUNE_CHECK(other.native_arch != family.native_arch || !supports_dtype(other, p.dtype),
                   id + " and " + other.family + " are both the default for " + p.dtype);
      for (const TaskParams& q : other.supported)
        CUTUNE_CHECK(template_name(p) != template_name(q), "two templates " + template_name(p));
    }
  }
  registry().push_back(std::move(family));
}

std::vector<const TemplateFamily*> template_families() {
  std::vector<const TemplateFamily*> out;
  for (const TemplateFamily& f : registry()) out.push_back(&f);
  std::stable_sort(out.begin(), out.end(), [](const TemplateFamily* a, const TemplateFamily* b) {
    if (a->computation != b->computation) return a->computation < b->computation;
    const int ra = family_rank(a->family), rb = family_rank(b->family);
    return ra != rb ? ra < rb : a->family < b->family;
  });
  return out;
}

TaskParams template_params(const std::string& name) {
  std::optional<TaskParams> p = find_template(name);
  if (!p) throw TaskError(fmt::format("unknown template '{}'", name));
  return *p;
}

std::vector<std::string> template_names(const std::string& computation, const std::string& family,
                                        const std::string& dtype) {
  std::vector<std::string> out;
  for (const TemplateFamily* f : template_families()) {
    if (f->computation != computation || (!family.empty() && f->family != family)) continue;
    for (const TaskParams& p : f->supported)
      if (dtype.empty() || p.dtype == dtype) out.push_back(template_name(p));
  }
  return out;
}

TaskParams default_params(const std::string& computation, const std::string& dtype,
                          const std::string& arch) {
  const TemplateFamily *native = nullptr, *general = nullptr, *any = nullptr;
  for (const TemplateFamily* f : template_families()) {
    if (f->computation != computation || !supports_dtype(*f, dtype)) continue;
    if (same_arch(arch, f->native_arch)) native = f;
    if (f->native_arch.empty()) general = f;
    if (any == nullptr) any = f;
  }
  const TemplateFamily* f = native ? native : general ? general : any;
  if (f == nullptr) {
    throw TaskError(
        fmt::format("{} has no template for --dtype {} (dtype/out-dtype/layout/family: {})",
                    computation, dtype, supported(computation, "")));
  }
  return *std::find_if(f->supported.begin(), f->supported.end(),
                       [&](const TaskParams& p) { return p.dtype == dtype; });
}

ResolvedTemplate resolve_template(const TaskRequest& r, const std::string& arch) {
  const OperatorRef o = operator_ref(r.op);
  if (!o.dtype.empty() && !r.dtype.empty() && r.dtype != o.dtype) {
    throw TaskError(fmt::format("{} is {}; for --dtype {} name the computation: {} --dtype {}",
                                r.op, o.dtype, r.dtype, o.computation, r.dtype));
  }
  const std::string epilogue = canonical_epilogue(r.epilogue);  // TaskError for bad text
  const TaskParams given{"", r.dtype, r.out_dtype, r.layout, r.family, r.runtime_m, epilogue};
  // `p` with the parameters the request gives.
  const auto asked = [&r, &epilogue](TaskParams p) {
    if (!r.dtype.empty()) p.dtype = r.dtype;
    if (!r.out_dtype.empty()) p.out_dtype = r.out_dtype;
    if (!r.layout.empty()) p.layout = r.layout;
    if (!r.family.empty()) p.family = r.family;
    if (r.runtime_m) p.runtime_m = true;
    if (!epilogue.empty()) p.epilogue = epilogue;
    return p;
  };
  if (!r.template_name.empty()) {
    // A template of the computation; of its dtype where the operator name fixes one.
    std::optional<TaskParams> p = find_template(r.template_name);
    if (!p || p->computation != o.computation || (!o.dtype.empty() && p->dtype != o.dtype)) {
      throw TaskError(fmt::format("unknown template '{}' for {} (known: {})", r.template_name, r.op,
                                  fmt::join(template_names(o.computation, "", o.dtype), ", ")));
    }
    // A template named as logs of before name it takes the epilogue asked.
    if (p->epilogue.empty()) p->epilogue = epilogue;
    const TaskParams want = asked(*p);
    if (!(want == *p)) {
      throw TaskError(fmt::format("template {} has {}; asked: {}", r.template_name,
                                  described(*p, given), described(want, given)));
    }
    check_epilogue(*find_family(*p), *p);
    return {operator_name(*p), template_name(*p), *p};
  }
  // The parameters not given are those of the computation's default for the dtype and target.
  const std::string dtype = !r.dtype.empty() ? r.dtype : !o.dtype.empty() ? o.dtype : "fp32";
  const TaskParams want = asked(default_params(o.computation, dtype, arch));
  if (find_family(want) == nullptr) {
    throw TaskError(fmt::format("{} has no template with {} (dtype/out-dtype/layout/family: {})",
                                o.computation, described(want, given),
                                supported(o.computation, want.dtype)));
  }
  check_epilogue(*find_family(want), want);
  return {operator_name(want), template_name(want), want};
}

std::string default_template(const std::string& op, const std::string& arch) {
  TaskRequest request;
  request.op = op;
  return resolve_template(request, arch).name;
}

std::unique_ptr<Template> make_template(const TaskParams& params,
                                        const std::vector<int64_t>& shape) {
  const TemplateFamily* f = find_family(params);
  if (f == nullptr) {
    throw TaskError(fmt::format("no template for {} (dtype/out-dtype/layout/family: {})",
                                template_name(params), supported(params.computation, "")));
  }
  if (params.runtime_m && !f->runtime_m) {
    throw TaskError(fmt::format("{}/{} has no run-time M yet", f->computation, f->family));
  }
  check_epilogue(*f, params);
  if (params.runtime_m && !params.epilogue.empty()) {
    throw TaskError(fmt::format("a run-time M takes no epilogue yet (--epilogue {})",
                                params.epilogue));
  }
  std::unique_ptr<Template> t = f->make(params, shape);
  // Records name the task by these (template.h): a template must agree with the registry.
  CUTUNE_CHECK(t->name() == template_name(params) && t->op() == operator_name(params),
               fmt::format("{}/{} made {} ({}) for {}", f->computation, f->family, t->name(),
                           t->op(), template_name(params)));
  return t;
}

std::unique_ptr<Template> make_template(const std::string& op, const std::vector<int64_t>& shape,
                                        const std::string& template_name, const std::string& arch) {
  TaskRequest request;
  request.op = op;
  request.template_name = template_name;
  return make_template(resolve_template(request, arch).params, shape);
}

}  // namespace cutune
