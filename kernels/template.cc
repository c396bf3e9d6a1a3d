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
                                        const std::string& template_name,
                                        const std::string& arch) {
  for (const OpInfo& o : list_ops()) {
    if (o.op != op) continue;
    const std::string name = template_name.empty() ? default_template(op, arch) : template_name;
    if (std::find(o.templates.begin(), o.templates.end(), name) == o.templates.end()) {
      throw TaskError(fmt::format("unknown template '{}' for {} (known: {})", template_name, op,
                                  fmt::join(o.templates, ", ")));
    }
    return find_entry(name)->make(shape);
  }
  unknown_operator(op);
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
