#include "src/spec/kernel_spec.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cutune::spec {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct TypeName {
  const char* name;
  ElemType type;
};

// Kernel Tuner passes numpy arrays, so its specs use numpy's names; C's are accepted too.
constexpr TypeName kTypeNames[] = {
    {"float", ElemType::f32},     {"float32", ElemType::f32}, {"double", ElemType::f64},
    {"float64", ElemType::f64},   {"half", ElemType::f16},    {"float16", ElemType::f16},
    {"bfloat16", ElemType::bf16}, {"int8", ElemType::i8},     {"char", ElemType::i8},
    {"int16", ElemType::i16},     {"short", ElemType::i16},   {"int32", ElemType::i32},
    {"int", ElemType::i32},       {"int64", ElemType::i64},   {"long", ElemType::i64},
    {"uint8", ElemType::u8},      {"uchar", ElemType::u8},    {"uint16", ElemType::u16},
    {"uint32", ElemType::u32},    {"uint", ElemType::u32},    {"uint64", ElemType::u64},
};

std::string field_string(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty())
    throw SpecError(fmt::format("{}.{} must be a non-empty string", where, key));
  return it->get<std::string>();
}

// An expression field: a string (Python) or a number.
SpecExpr parse_expr(const json& v, const std::string& field,
                    const std::vector<std::string>& names) {
  SpecExpr e;
  if (v.is_string())
    e.text = v.get<std::string>();
  else if (v.is_number_integer())
    e.text = std::to_string(v.get<int64_t>());
  else
    throw SpecError(fmt::format("{} must be an expression string or an integer", field));
  try {
    e.parsed = std::make_shared<const replay::PythonExpr>(replay::PythonExpr::parse(e.text, names));
  } catch (const replay::ExprError& err) {
    throw SpecError(fmt::format("{}: {}", field, err.what()));
  }
  return e;
}

SpecArgument parse_argument(const json& a, size_t index, const std::vector<std::string>& names,
                            const fs::path& folder) {
  const std::string where = fmt::format("KernelSpecification.Arguments[{}]", index);
  if (!a.is_object()) throw SpecError(where + " must be an object");
  SpecArgument arg;
  arg.name = field_string(a, "Name", where);
  const ArgType type = [&] {
    try {
      return parse_arg_type(field_string(a, "Type", where));
    } catch (const SpecError& e) {
      throw SpecError(fmt::format("{}.Type: {}", where, e.what()));
    }
  }();
  arg.type = type.elem;
  arg.lanes = type.lanes;
  const std::string memory = a.value("MemoryType", std::string("Vector"));
  if (memory != "Vector" && memory != "Scalar")
    throw SpecError(fmt::format("{}.MemoryType is '{}' (known: Vector, Scalar)", where, memory));
  arg.is_scalar = memory == "Scalar";
  const std::string mem_type = a.value("MemType", std::string("Global"));
  if (mem_type != "Global" && mem_type != "Constant")
    throw SpecError(fmt::format("{}.MemType is '{}' (known: Global, Constant)", where, mem_type));
  arg.is_constant = mem_type == "Constant";
  if (arg.is_constant && arg.is_scalar)
    throw SpecError(where + ": a constant-memory argument must be a Vector");
  if (arg.lanes > 1 && arg.is_scalar)
    throw SpecError(fmt::format("{}: a Scalar of vector type '{}' is not supported", where,
                                a["Type"].get<std::string>()));
  arg.read_only = a.value("AccessType", std::string("ReadWrite")) == "ReadOnly";
  if (auto out = a.find("Output"); out != a.end()) {
    if (!out->is_number() && !out->is_boolean()) throw SpecError(where + ".Output must be 0 or 1");
    arg.is_output = out->is_boolean() ? out->get<bool>() : out->get<double>() != 0;
  }
  if (arg.is_output && (arg.is_scalar || arg.is_constant))
    throw SpecError(where + ": an output must be a Vector in global memory");
  if (arg.is_scalar) {
    arg.size = parse_expr(json(1), where + ".Size", names);
  } else {
    if (!a.contains("Size")) throw SpecError(where + ".Size is missing");
    arg.size = parse_expr(a["Size"], where + ".Size", names);
  }
  const std::string fill = a.value("FillType", std::string("Constant"));
  if (fill == "Constant")
    arg.fill = FillType::constant;
  else if (fill == "Random")
    arg.fill = FillType::random;
  else if (fill == "BinaryRaw")
    arg.fill = FillType::binary_raw;
  else
    throw SpecError(
        fmt::format("{}.FillType is '{}' (known: Constant, Random, BinaryRaw)", where, fill));
  if (auto v = a.find("FillValue"); v != a.end()) {
    if (v->is_string())
      arg.fill_expr = parse_expr(*v, where + ".FillValue", names);
    else if (v->is_number())
      arg.fill_value = v->get<double>();
    else
      throw SpecError(where + ".FillValue must be a number or an expression string");
  } else if (arg.fill == FillType::random) {
    arg.fill_value = 1.0;
  }
  if (arg.fill == FillType::binary_raw) {
    arg.data_source = folder / field_string(a, "DataSource", where);
    if (!fs::exists(arg.data_source))
      throw SpecError(fmt::format("{}.DataSource: no file '{}'", where, arg.data_source.string()));
  }
  return arg;
}

SpecReference parse_reference(const json& r, const KernelSpec& spec, const fs::path& folder) {
  const std::string where = "KernelSpecification.Reference";
  SpecReference ref;
  ref.configuration = spec.defaults();
  if (!r.is_object()) throw SpecError(where + " must be an object");
  const int kinds = int(r.contains("KernelName")) + int(r.contains("Configuration")) +
                    int(r.contains("OutputFile"));
  if (kinds > 1 && !(kinds == 2 && r.contains("KernelName") && r.contains("Configuration")))
    throw SpecError(where + " takes one of KernelName, Configuration, OutputFile");
  if (auto c = r.find("Configuration"); c != r.end()) {
    if (!c->is_object()) throw SpecError(where + ".Configuration must be an object");
    for (const auto& [name, value] : c->items()) {
      const int at = spec.space.parameter_position(name);
      if (at < 0)
        throw SpecError(fmt::format("{}.Configuration: unknown parameter '{}'", where, name));
      if (!value.is_number_integer())
        throw SpecError(fmt::format("{}.Configuration.{} must be an integer", where, name));
      ref.configuration[static_cast<size_t>(at)] = value.get<int64_t>();
    }
  }
  if (r.contains("KernelName")) {
    ref.kind = SpecReference::Kind::kernel;
    ref.kernel_name = field_string(r, "KernelName", where);
    ref.kernel_file =
        r.contains("KernelFile") ? folder / field_string(r, "KernelFile", where) : spec.kernel_file;
  } else if (r.contains("OutputFile")) {
    ref.kind = SpecReference::Kind::output_file;
    ref.output_file = folder / field_string(r, "OutputFile", where);
    if (!fs::exists(ref.output_file))
      throw SpecError(fmt::format("{}.OutputFile: no file '{}'", where, ref.output_file.string()));
  }
  return ref;
}

std::vector<std::string> split_template_arguments(const std::string& text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  out.push_back(current);
  for (std::string& s : out) {
    const size_t b = s.find_first_not_of(" \t");
    const size_t e = s.find_last_not_of(" \t");
    s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    if (s.empty()) throw SpecError("KernelSpecification.TemplateArguments has an empty argument");
  }
  return out;
}

}  // namespace

ElemType parse_elem_type(const std::string& name) {
  for (const TypeName& t : kTypeNames)
    if (name == t.name) return t.type;
  std::string known;
  for (const TypeName& t : kTypeNames) known += (known.empty() ? "" : ", ") + std::string(t.name);
  throw SpecError(fmt::format("unknown type '{}' (known: {})", name, known));
}

ArgType parse_arg_type(const std::string& name) {
  // CUDA's vector types of the element types above, as far as the emulator knows them.
  static constexpr struct {
    const char* name;
    ElemType elem;
    int lanes;
  } kVectors[] = {{"float2", ElemType::f32, 2}, {"float4", ElemType::f32, 4},
                  {"double2", ElemType::f64, 2}, {"int2", ElemType::i32, 2},
                  {"int4", ElemType::i32, 4},   {"uint2", ElemType::u32, 2},
                  {"uint4", ElemType::u32, 4}};
  for (const auto& v : kVectors)
    if (name == v.name) return {v.elem, v.lanes};
  try {
    return {parse_elem_type(name), 1};
  } catch (const SpecError&) {
    std::string known;
    for (const TypeName& t : kTypeNames) known += (known.empty() ? "" : ", ") + std::string(t.name);
    for (const auto& v : kVectors) known += ", " + std::string(v.name);
    throw SpecError(fmt::format("unknown type '{}' (known: {})", name, known));
  }
}

int elem_bytes(ElemType t) {
  switch (t) {
    case ElemType::i8:
    case ElemType::u8:
      return 1;
    case ElemType::f16:
    case ElemType::bf16:
    case ElemType::i16:
    case ElemType::u16:
      return 2;
    case ElemType::f32:
    case ElemType::i32:
    case ElemType::u32:
      return 4;
    case ElemType::f64:
    case ElemType::i64:
    case ElemType::u64:
      return 8;
  }
  return 0;
}

bool elem_is_float(ElemType t) {
  return t == ElemType::f16 || t == ElemType::bf16 || t == ElemType::f32 || t == ElemType::f64;
}

const char* elem_name(ElemType t) {
  switch (t) {
    case ElemType::f16:
      return "float16";
    case ElemType::bf16:
      return "bfloat16";
    case ElemType::f32:
      return "float32";
    case ElemType::f64:
      return "float64";
    case ElemType::i8:
      return "int8";
    case ElemType::i16:
      return "int16";
    case ElemType::i32:
      return "int32";
    case ElemType::i64:
      return "int64";
    case ElemType::u8:
      return "uint8";
    case ElemType::u16:
      return "uint16";
    case ElemType::u32:
      return "uint32";
    case ElemType::u64:
      return "uint64";
  }
  return "?";
}

const char* elem_c_type(ElemType t) {
  switch (t) {
    case ElemType::f16:
      return "__half";
    case ElemType::bf16:
      return "__nv_bfloat16";
    case ElemType::f32:
      return "float";
    case ElemType::f64:
      return "double";
    case ElemType::i8:
      return "signed char";
    case ElemType::i16:
      return "short";
    case ElemType::i32:
      return "int";
    case ElemType::i64:
      return "long long";
    case ElemType::u8:
      return "unsigned char";
    case ElemType::u16:
      return "unsigned short";
    case ElemType::u32:
      return "unsigned int";
    case ElemType::u64:
      return "unsigned long long";
  }
  return "?";
}

std::string arg_c_type(const SpecArgument& a) {
  if (a.lanes == 1) return elem_c_type(a.type);
  const char* base = a.type == ElemType::f32   ? "float"
                     : a.type == ElemType::f64 ? "double"
                     : a.type == ElemType::i32 ? "int"
                                               : "uint";
  return fmt::format("{}{}", base, a.lanes);
}

std::vector<int64_t> KernelSpec::defaults() const {
  std::vector<int64_t> out;
  for (const auto& p : space.parameters) {
    const bool listed = p.default_value && std::find(p.values.begin(), p.values.end(),
                                                     *p.default_value) != p.values.end();
    out.push_back(listed ? *p.default_value : p.values.front());
  }
  return out;
}

std::vector<int64_t> KernelSpec::values_for(const std::vector<int64_t>& params) const {
  std::vector<int64_t> v = params;
  v.insert(v.end(), problem_size.begin(), problem_size.end());
  for (const auto& p : space.parameters) {
    v.push_back(*std::max_element(p.values.begin(), p.values.end()));
    v.push_back(*std::min_element(p.values.begin(), p.values.end()));
  }
  return v;
}

std::string KernelSpec::read_kernel_source() const {
  std::ifstream in(kernel_file, std::ios::binary);
  if (!in)
    throw SpecError(
        fmt::format("KernelSpecification.KernelFile: no file '{}'", kernel_file.string()));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void parse_kernel_part(const json& ks, KernelSpec& spec, const fs::path& folder);

KernelSpec parse_kernel_spec(const json& j, const fs::path& path, bool require_kernel_file) {
  KernelSpec spec;
  spec.path = path;
  const fs::path folder = path.parent_path();
  spec.space = replay::parse_t1_spec(j);
  if (spec.space.parameters.empty())
    throw SpecError("ConfigurationSpace.TuningParameters is empty");
  for (const auto& p : spec.space.parameters) {
    if (p.values.empty()) throw SpecError(fmt::format("parameter '{}' has no values", p.name));
    // Kernel Tuner's own specs have it (the hub's hotspot): not an error, but never silent.
    if (p.default_value &&
        std::find(p.values.begin(), p.values.end(), *p.default_value) == p.values.end())
      spec.warnings.push_back(fmt::format(
          "parameter '{}' has Default {}, which is not among its Values; its first value, {}, "
          "stands for it",
          p.name, *p.default_value, p.values.front()));
  }
  auto ks_it = j.find("KernelSpecification");
  if (ks_it == j.end() || !ks_it->is_object())
    throw SpecError("not a T1 kernel spec: no \"KernelSpecification\" object");
  const json& ks = *ks_it;
  const std::string where = "KernelSpecification";
  // Only compiling needs CUDA; the space of an OpenCL kernel's spec is still readable.
  if (auto lang = ks.find("Language"); require_kernel_file && lang != ks.end() && *lang != "CUDA")
    throw SpecError(
        fmt::format("{}.Language is {} (only \"CUDA\" is supported)", where, lang->dump()));
  spec.benchmark_name = ks.value("BenchmarkName", std::string());
  spec.kernel_name = field_string(ks, "KernelName", where);
  spec.kernel_file = folder / field_string(ks, "KernelFile", where);
  spec.kernel_file_exists = fs::is_regular_file(spec.kernel_file);
  if (require_kernel_file && !spec.kernel_file_exists)
    throw SpecError(fmt::format("{}.KernelFile: no file '{}'", where, spec.kernel_file.string()));
  if (auto opts = ks.find("CompilerOptions"); opts != ks.end() && !opts->is_null()) {
    if (!opts->is_array() ||
        !std::all_of(opts->begin(), opts->end(), [](const json& o) { return o.is_string(); }))
      throw SpecError(where + ".CompilerOptions must be an array of strings");
    spec.compiler_options = opts->get<std::vector<std::string>>();
  }
  if (auto ps = ks.find("ProblemSize"); ps != ks.end()) {
    if (!ps->is_array() ||
        !std::all_of(ps->begin(), ps->end(), [](const json& v) { return v.is_number_integer(); }))
      throw SpecError(where + ".ProblemSize must be an array of integers");
    spec.problem_size = ps->get<std::vector<int64_t>>();
  }

  for (const auto& p : spec.space.parameters) spec.names.push_back(p.name);
  for (size_t i = 0; i < spec.problem_size.size(); ++i)
    spec.names.push_back(fmt::format("ProblemSize[{}]", i));
  for (const auto& p : spec.space.parameters) {
    spec.names.push_back(fmt::format("max({})", p.name));
    spec.names.push_back(fmt::format("min({})", p.name));
  }

  try {
    parse_kernel_part(ks, spec, folder);
  } catch (const SpecError& e) {
    // The space stays readable (`cutune space`); compiling reports the error.
    if (require_kernel_file) throw;
    spec.kernel_error = e.what();
  }
  return spec;
}

void parse_kernel_part(const json& ks, KernelSpec& spec, const fs::path& folder) {
  const std::string where = "KernelSpecification";
  static constexpr const char* kAxes[] = {"X", "Y", "Z"};
  if (auto l = ks.find("CutuneLaunch"); l != ks.end()) {
    if (*l != "GlobalSize")
      throw SpecError(fmt::format("{}.CutuneLaunch is {} (known: \"GlobalSize\"; leave it out for "
                                  "Kernel Tuner's launch rule)",
                                  where, l->dump()));
    spec.launch = KernelSpec::Launch::global_size;
  }
  // Kernel Tuner does not read LocalSize and GlobalSize: under its rule one that does not
  // parse is a warning, and the expressions stay empty.
  const bool cutune_launch = spec.launch == KernelSpec::Launch::global_size;
  auto dims = [&](const char* key, SpecExpr(&out)[3]) {
    try {
      auto it = ks.find(key);
      if (it == ks.end() || !it->is_object())
        throw SpecError(fmt::format("{}.{} must be an object with X, Y, Z", where, key));
      for (int d = 0; d < 3; ++d) {
        const std::string field = fmt::format("{}.{}.{}", where, key, kAxes[d]);
        out[d] =
            parse_expr(it->contains(kAxes[d]) ? (*it)[kAxes[d]] : json("1"), field, spec.names);
      }
    } catch (const SpecError& e) {
      if (cutune_launch) throw;
      for (int d = 0; d < 3; ++d) out[d] = {};
      spec.warnings.push_back(fmt::format("{} (not used: Kernel Tuner's launch rule)", e.what()));
    }
  };
  dims("LocalSize", spec.block);
  dims("GlobalSize", spec.grid);
  const std::string size_type = ks.value("GlobalSizeType", std::string("CUDA"));
  if (cutune_launch && size_type != "CUDA" && size_type != "OpenCL")
    throw SpecError(
        fmt::format("{}.GlobalSizeType is '{}' (known: CUDA, OpenCL)", where, size_type));
  spec.grid_is_blocks = size_type == "CUDA";
  if (!cutune_launch && (spec.problem_size.empty() || spec.problem_size.size() > 3))
    throw SpecError(fmt::format("{}.ProblemSize needs 1 to 3 sizes: Kernel Tuner's launch rule "
                                "divides it into the grid",
                                where));
  for (int d = 0; d < 3; ++d) {
    const std::string key = fmt::format("GridDiv{}", kAxes[d]);
    auto it = ks.find(key);
    if (it == ks.end() || it->is_null()) continue;
    if (!it->is_array())
      throw SpecError(fmt::format("{}.{} must be an array of expressions", where, key));
    for (size_t i = 0; i < it->size(); ++i)
      spec.grid_div[d].push_back(
          parse_expr((*it)[i], fmt::format("{}.{}[{}]", where, key, i), spec.names));
  }
  spec.shared_memory = parse_expr(
      ks.contains("SharedMemory") && !ks["SharedMemory"].is_null() ? ks["SharedMemory"] : json(0),
      where + ".SharedMemory", spec.names);
  if (auto t = ks.find("TemplateArguments"); t != ks.end() && !t->is_null()) {
    if (!t->is_string()) throw SpecError(where + ".TemplateArguments must be a string");
    spec.template_arguments = split_template_arguments(t->get<std::string>());
  }

  auto args_it = ks.find("Arguments");
  if (args_it == ks.end() || !args_it->is_array())
    throw SpecError(where + ".Arguments must be an array");
  if (args_it->empty())
    throw SpecError(where +
                    ".Arguments is empty: the kernel's arguments (type, size, fill) are needed to "
                    "run it");
  for (size_t i = 0; i < args_it->size(); ++i) {
    SpecArgument a = parse_argument((*args_it)[i], i, spec.names, folder);
    for (const auto& b : spec.arguments)
      if (b.name == a.name)
        throw SpecError(fmt::format("{}.Arguments[{}]: name '{}' is used twice", where, i, a.name));
    spec.arguments.push_back(std::move(a));
  }
  if (auto tol = ks.find("Tolerance"); tol != ks.end()) {
    if (!tol->is_number() || tol->get<double>() < 0)
      throw SpecError(where + ".Tolerance must be a number >= 0");
    spec.tolerance = tol->get<double>();
  }
  spec.reference.configuration = spec.defaults();
  if (auto r = ks.find("Reference"); r != ks.end())
    spec.reference = parse_reference(*r, spec, folder);
  if (spec.reference.kind == SpecReference::Kind::output_file) {
    const auto outputs = std::count_if(spec.arguments.begin(), spec.arguments.end(),
                                       [](const SpecArgument& a) { return a.is_output; });
    if (outputs != 1)
      throw SpecError(where + ".Reference.OutputFile needs exactly one output argument");
  }
}

KernelSpec load_kernel_spec(const fs::path& path, bool require_kernel_file) {
  std::ifstream in(path);
  if (!in) throw SpecError(fmt::format("cannot open spec '{}'", path.string()));
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    const json j = replay::parse_json_text(buffer.str(), "the spec");
    return parse_kernel_spec(j, path, require_kernel_file);
  } catch (const ConfigError& e) {
    throw SpecError(fmt::format("{}: {}", path.string(), e.what()));
  }
}

}  // namespace cutune::spec
