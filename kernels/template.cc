#include "kernels/template.h"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cutune {

namespace {

// Function-local, so that registrars in other files find it constructed whatever the order of
// static initialisation.
// In registration order (a file's registrars run in order), so an operator's templates are
// listed as their file declares them.
std::vector<TemplateEntry>& registry() {
  static std::vector<TemplateEntry> entries;
  return entries;
}

const TemplateEntry* find_entry(const std::string& name) {
  for (const TemplateEntry& e : registry())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace

TemplateRegistrar::TemplateRegistrar(TemplateEntry entry) {
  CUTUNE_CHECK(!entry.op.empty() && !entry.name.empty() && entry.make, entry.name);
  const TaskParams& p = entry.params;
  CUTUNE_CHECK(!p.computation.empty() && !p.dtype.empty() && !p.out_dtype.empty() &&
                   !p.layout.empty() && !p.family.empty(),
               "template " + entry.name + " registered without its task parameters");
  CUTUNE_CHECK(find_entry(entry.name) == nullptr, "template " + entry.name + " registered twice");
  registry().push_back(std::move(entry));
}

std::vector<OpInfo> list_ops() {
  std::map<std::string, OpInfo> ops;
  for (const TemplateEntry& e : registry()) {
    const std::string& name = e.name;
    OpInfo& o = ops[e.op];
    o.op = e.op;
    if (e.op_default) {
      o.templates.insert(o.templates.begin(), name);
      o.shape_help = e.shape_help;
      o.description = e.description;
    } else {
      o.templates.push_back(name);
    }
    if (e.sm90_default) o.sm90_default = name;
  }
  std::vector<OpInfo> out;
  for (auto& [op, o] : ops) {
    CUTUNE_CHECK(!o.description.empty(), "operator " + op + " has no default template");
    out.push_back(std::move(o));
  }
  return out;
}

namespace {

[[noreturn]] void unknown_operator(const std::string& op) {
  std::string known;
  for (const OpInfo& o : list_ops()) known += (known.empty() ? "" : ", ") + o.op;
  throw TaskError(fmt::format("unknown operator '{}' (known: {})", op, known));
}

[[noreturn]] void unknown_template(const OpInfo& o, const std::string& name) {
  throw TaskError(fmt::format("unknown template '{}' for {} (known: {})", name, o.op,
                              fmt::join(o.templates, ", ")));
}

}  // namespace

std::string default_template(const std::string& op, const std::string& arch) {
  for (const OpInfo& o : list_ops()) {
    if (o.op != op) continue;
    const bool hopper = arch == "sm_90" || arch == "sm_90a";
    return hopper && !o.sm90_default.empty() ? o.sm90_default : o.templates.front();
  }
  unknown_operator(op);
}

std::unique_ptr<Template> make_template(const std::string& op, const std::vector<int64_t>& shape,
                                        const std::string& template_name, const std::string& arch) {
  for (const OpInfo& o : list_ops()) {
    if (o.op != op) continue;
    const std::string name = template_name.empty() ? default_template(op, arch) : template_name;
    if (std::find(o.templates.begin(), o.templates.end(), name) == o.templates.end()) {
      unknown_template(o, template_name);
    }
    return find_entry(name)->make(shape);
  }
  unknown_operator(op);
}

const TaskParams& template_params(const std::string& name) {
  const TemplateEntry* e = find_entry(name);
  if (e == nullptr) throw TaskError(fmt::format("unknown template '{}'", name));
  return e->params;
}

namespace {

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
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The parameters of every template of `computation` (of `dtype` where not empty), as
// "dtype/out-dtype/layout/family".
std::string supported(const std::string& computation, const std::string& dtype) {
  std::vector<std::string> out;
  for (const TemplateEntry& e : registry()) {
    const TaskParams& p = e.params;
    if (p.computation != computation || (!dtype.empty() && p.dtype != dtype)) continue;
    out.push_back(fmt::format("{}/{}/{}/{}", p.dtype, p.out_dtype, p.layout, p.family));
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

ResolvedTemplate resolve_template(const TaskRequest& r, const std::string& arch) {
  // The operator name: one of before (its templates share computation and dtype), or the
  // computation's operator for the dtype asked (fp32 when none).
  std::string op, computation;
  const TaskParams given{"", r.dtype, r.out_dtype, r.layout, r.family};
  bool is_op = false, is_computation = false;
  for (const TemplateEntry& e : registry()) {
    is_op |= e.op == r.op;
    is_computation |= e.params.computation == r.op;
  }
  if (is_op && !(is_computation && !r.dtype.empty())) {
    op = r.op;
    const TaskParams& d = template_params(default_template(op));
    computation = d.computation;
    if (!r.dtype.empty() && r.dtype != d.dtype) {
      throw TaskError(fmt::format("{} is {}; for --dtype {} name the computation: {} --dtype {}",
                                  op, d.dtype, r.dtype, computation, r.dtype));
    }
  } else if (is_computation) {
    computation = r.op;
    const std::string dtype = r.dtype.empty() ? "fp32" : r.dtype;
    for (const TemplateEntry& e : registry()) {
      if (e.params.computation == computation && e.params.dtype == dtype && e.op_default) op = e.op;
    }
    if (op.empty()) {
      throw TaskError(
          fmt::format("{} has no template for --dtype {} (dtype/out-dtype/layout/family: {})",
                      computation, dtype, supported(computation, "")));
    }
  } else {
    unknown_operator(r.op);
  }
  // `p` with the parameters the request gives.
  const auto asked = [&r](TaskParams p) {
    if (!r.dtype.empty()) p.dtype = r.dtype;
    if (!r.out_dtype.empty()) p.out_dtype = r.out_dtype;
    if (!r.layout.empty()) p.layout = r.layout;
    if (!r.family.empty()) p.family = r.family;
    return p;
  };
  if (!r.template_name.empty()) {
    const TemplateEntry* e = find_entry(r.template_name);
    if (e == nullptr || e->op != op) {
      for (const OpInfo& o : list_ops()) {
        if (o.op == op) unknown_template(o, r.template_name);
      }
    }
    const TaskParams want = asked(e->params);
    if (!(want == e->params)) {
      throw TaskError(fmt::format("template {} has {}; asked: {}", e->name,
                                  described(e->params, given), described(want, given)));
    }
    return {op, e->name};
  }
  // The parameters not given are those of the operator's default template for the target.
  const TaskParams want = asked(template_params(default_template(op, arch)));
  for (const TemplateEntry& e : registry()) {
    if (e.op == op && e.params == want) return {op, e.name};
  }
  throw TaskError(fmt::format("{} has no template with {} (dtype/out-dtype/layout/family: {})",
                              computation, described(want, given),
                              supported(computation, want.dtype)));
}

std::vector<int64_t> shape_of_size(const std::string& op, const std::vector<int64_t>& shape,
                                   size_t sizes, const char* help) {
  if (shape.size() != sizes) {
    throw TaskError(
        fmt::format("{} takes a shape {} ({} sizes), got {} sizes", op, help, sizes, shape.size()));
  }
  return shape;
}

void check_gemm_shape(const std::string& op, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  if (m < 1 || n < 1 || k < 1) {
    throw TaskError(fmt::format("{} needs M, N, K >= 1, got {},{},{}", op, m, n, k));
  }
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim || m * k >= INT32_MAX || k * n >= INT32_MAX ||
      m * n >= INT32_MAX) {
    throw TaskError(fmt::format(
        "{} {}x{}x{} is too large: each size at most 2^20 and each matrix under 2^31 elements", op,
        m, n, k));
  }
}

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find_first_of(",x", pos);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(pos, end - pos);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size()) {
      throw TaskError(
          fmt::format("bad shape '{}': expected positive integers separated by commas", text));
    }
    if (v < 0) throw TaskError(fmt::format("bad shape '{}': sizes must not be negative", text));
    out.push_back(v);
    pos = end + 1;
  }
  return out;
}

}  // namespace cutune
