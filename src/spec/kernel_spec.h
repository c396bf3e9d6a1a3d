#pragma once
// A user's own CUDA kernel, described by a T1 file (the FAIR auto-tuning input format): the
// KernelSpecification (kernel name and file, compiler options, problem size, block and grid
// size as Python expressions of the parameters, shared memory, the arguments with type, size
// and fill) on top of the ConfigurationSpace that src/replay/t1_spec reads.
//
// Expressions may read every tuning parameter, `ProblemSize[i]`, and `max(P)` / `min(P)`
// (the largest / smallest listed value of parameter P), with src/replay's Python semantics.
//
// A spec means what Kernel Tuner's tune_kernel_T1 makes of it (src/spec/spec_task.h has the
// launch and the source): the block is the parameters block_size_x/y/z (default 256, 1, 1), the
// grid ProblemSize divided by GridDivX/Y/Z (default: the block size parameter) rounded up, and
// LocalSize, GlobalSize and GlobalSizeType are not read; a constant-memory argument is a kernel
// parameter *and* fills the __constant__ symbol of its name.
//
// Fields cutune adds (all optional, inside KernelSpecification):
//   "CutuneLaunch": "GlobalSize"   cutune's own launch rule instead: LocalSize is the block and
//                 GlobalSize the grid, in blocks ("GlobalSizeType": "CUDA") or in threads divided
//                 by GridDiv (default: LocalSize) and rounded up ("OpenCL").
//   "Reference": {"KernelName": NAME [, "KernelFile": FILE]}   another kernel, launched with the
//                 reference configuration; or {"Configuration": {P: V, ...}}  (default: every
//                 parameter's "Default", else its first value); or {"OutputFile": FILE} (the
//                 expected raw output of the single output argument).
//   "Tolerance": number   the largest accepted error (see src/measure/correctness.h); default
//                 by the output's type (exact for integers).
//   "TemplateArguments": "float, block_size_x"  the kernel is a template instantiated with
//                 these (parameters are replaced by their values).
//   Argument "FillType": "BinaryRaw" with "DataSource": FILE (raw little-endian elements).
// Files are relative to the spec's folder.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "src/replay/python_expr.h"
#include "src/replay/t1_spec.h"

namespace cutune::spec {

// Bad or unsupported content of a spec: one line that names the field. Exit code 2.
class SpecError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// Element types, with the names Kernel Tuner's specs use (numpy's and C's spellings).
enum class ElemType : uint8_t { f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64 };

ElemType parse_elem_type(const std::string& name);  // SpecError listing the known names
// An argument's Type: its element type and, for CUDA's vector types ("float2", "int4"), the
// lanes of one element. SpecError listing the known names.
struct ArgType {
  ElemType elem = ElemType::f32;
  int lanes = 1;  // 1, 2 or 4
};
ArgType parse_arg_type(const std::string& name);
int elem_bytes(ElemType t);
bool elem_is_float(ElemType t);
const char* elem_name(ElemType t);    // "float32", "int32", ...
const char* elem_c_type(ElemType t);  // "float", "int", "unsigned char", "__half", ...

// A Python expression over the spec's names (parameters, ProblemSize[i], max(P), min(P)).
struct SpecExpr {
  std::string text;
  std::shared_ptr<const replay::PythonExpr> parsed;
};

enum class FillType : uint8_t { constant, random, binary_raw };

struct SpecArgument {
  std::string name;
  ElemType type = ElemType::f32;
  int lanes = 1;             // a vector type's ("float4": 4); Size counts vectors
  bool is_scalar = false;    // "MemoryType": "Scalar": passed by value
  bool is_constant = false;  // "MemType": "Constant": a kernel parameter that also fills the
                             // __constant__ symbol `name` (as Kernel Tuner does)
  bool is_output = false;    // "Output": 1 (compared with the reference)
  bool read_only = false;    // "AccessType": "ReadOnly"
  SpecExpr size;             // elements (vectors); "1" for scalars
  FillType fill = FillType::constant;
  double fill_value = 0;              // constant: the value; random: uniform in [0, FillValue)
  std::optional<SpecExpr> fill_expr;  // cutune: "FillValue" as an expression ("ProblemSize[0]")
  std::filesystem::path data_source;  // binary_raw
};

// The argument's type in C: elem_c_type, or the vector type ("float4").
std::string arg_c_type(const SpecArgument& a);

struct SpecReference {
  enum class Kind : uint8_t { configuration, kernel, output_file };
  Kind kind = Kind::configuration;
  std::vector<int64_t> configuration;  // one value per parameter, in the spec's order
  std::string kernel_name;             // Kind::kernel
  std::filesystem::path kernel_file;   // Kind::kernel (default: the spec's kernel file)
  std::filesystem::path output_file;   // Kind::output_file
};

struct KernelSpec {
  std::filesystem::path path;  // the spec file
  std::string benchmark_name;
  std::string kernel_name;            // as written ("vector_add" or a template's name)
  std::filesystem::path kernel_file;  // resolved against the spec's folder
  bool kernel_file_exists = false;
  std::vector<std::string> compiler_options;
  std::vector<int64_t> problem_size;
  // Kernel Tuner's launch rule, or cutune's ("CutuneLaunch": "GlobalSize").
  enum class Launch : uint8_t { kernel_tuner, global_size };
  Launch launch = Launch::kernel_tuner;
  SpecExpr block[3];                  // LocalSize (the block under Launch::global_size)
  SpecExpr grid[3];                   // GlobalSize: grid_is_blocks: blocks; else threads
  bool grid_is_blocks = true;         // "GlobalSizeType": "CUDA" (else "OpenCL")
  std::vector<SpecExpr> grid_div[3];  // "GridDivX/Y/Z"; empty: the block size
  SpecExpr shared_memory;             // dynamic shared memory in bytes
  std::vector<std::string> template_arguments;  // empty: not a template
  std::vector<SpecArgument> arguments;
  SpecReference reference;
  std::optional<double> tolerance;

  std::vector<std::string> warnings;  // one line each: what the spec says that is not used
  std::string kernel_error;        // loaded without require_kernel_file: what was wrong with
                                   // the kernel part (sizes, arguments), else empty
  replay::T1Spec space;            // parameters and conditions
  std::vector<std::string> names;  // what expressions may read, in value-vector order

  // Every parameter's default ("Default", else its first listed value), in the spec's order.
  std::vector<int64_t> defaults() const;
  // The value vector for expressions: `params` (one per parameter) then the constants.
  std::vector<int64_t> values_for(const std::vector<int64_t>& params) const;
  std::string read_kernel_source() const;  // SpecError if the file is missing
};

// Loads a T1 file with a KernelSpecification. SpecError (one line naming the field) for a
// file that is not T1, a Language other than CUDA, a missing kernel file (only when
// `require_kernel_file`), an expression that does not parse or reads an unknown name, an
// unknown argument type or fill, and the like.
KernelSpec load_kernel_spec(const std::filesystem::path& path, bool require_kernel_file = true);
KernelSpec parse_kernel_spec(const nlohmann::json& j, const std::filesystem::path& path,
                             bool require_kernel_file = true);

}  // namespace cutune::spec
