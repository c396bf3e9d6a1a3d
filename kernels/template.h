#pragma once
// A schedule template: for one operator instance (a task: operator plus shape), the knobs it
// declares and, for one configuration of them, the loop-nest IR of the kernel. A template
// knows nothing of NVRTC or GPUs; it also supplies what checking a kernel needs: the tensors
// in parameter order, a CPU reference, and the work done (for GFLOP/s).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/baseline_spec.h"
#include "src/base/errors.h"
#include "src/ir/ir.h"
#include "src/ir/verify.h"
#include "src/space/config_space.h"

namespace cutune {

// Bad user input about an operator or shape: a one-line message, exit code 2 at the CLI.
class TaskError : public UserError {
 public:
  using UserError::UserError;
};

// One kernel argument as the template sees it: a global tensor, input or output.
struct TensorSpec {
  std::string name;
  ir::Type type;
  int64_t elements = 0;
  bool is_output = false;
  // Outputs only: some configurations accumulate into it (split-K with atomics), so whoever
  // launches the kernel zeroes it before every launch. Otherwise outputs need no initial value.
  bool zero_init = false;
};

class Template {
 public:
  virtual ~Template() = default;

  virtual std::string op() const = 0;              // "gemm"
  virtual std::string name() const = 0;            // "gemm_nn"
  virtual std::vector<int64_t> shape() const = 0;  // as the user gave it
  virtual const ConfigSpace& space() const = 0;
  // The kernel for one configuration (valid or not; invalid ones may fail to build with an
  // IRError or be rejected by the verifier).
  virtual ir::Kernel build(const Config& config) const = 0;
  // The kernel's global tensors, in parameter order.
  virtual std::vector<TensorSpec> tensors() const = 0;
  // Computes the outputs from the inputs on the CPU (double accumulation), in place.
  virtual void reference(std::vector<std::vector<float>>& tensors) const = 0;
  // Floating-point operations of one run (2·M·N·K for GEMM).
  virtual double flops() const = 0;
  // The longest reduction an output element sums over (for error tolerances).
  virtual int64_t reduction_length() const = 0;
  // What a vendor library computes for this task (cuBLAS, cuDNN): the baseline a tuned kernel
  // is compared with and, on the GPU, the reference it is checked against. None by default.
  virtual BaselineSpec baseline() const { return {}; }
  // Configurations a well hand-tuned kernel would use, for tests and as search seeds.
  virtual std::vector<Config> reference_configs() const { return {}; }
  // The names of the loops and of the buffers (global, then shared and local) that build()
  // may produce, in a fixed order independent of the shape and configuration; feature
  // extractors lay out their slots by them. Empty: the template does not declare them.
  virtual std::vector<std::string> loop_names() const { return {}; }
  virtual std::vector<std::string> buffer_names() const { return {}; }
};

// What a template computes, as task parameters (operators as data): the computation ("gemm",
// "conv2d", "depthwise_conv2d"), the inputs' and the output's element type ("fp32", "fp16",
// "bf16"), the layout ("nn" or "nt": GEMM's B stored [K,N] or [N,K]; "nchw" or "nhwc" for a
// convolution's input) and the instruction family of its schedule ("simt": FMA; "mma":
// mma.sync tensor cores; "wgmma": Hopper's warpgroup MMA).
struct TaskParams {
  std::string computation, dtype, out_dtype, layout, family;
  bool operator==(const TaskParams&) const = default;
};

// The registry of operators. Each schedule template's file in kernels/ registers itself with a
// static registrar, so that a new operator is one new file and nothing else changes:
//
//   const TemplateRegistrar kGemmNn{{.op = "gemm", .name = "gemm_nn", .shape_help = "M,N,K",
//                                    .description = "...", .op_default = true,
//                                    .make = [](const std::vector<int64_t>& s) { ... }}};
//
// `make` validates the shape (TaskError with a one-line message). kernels/ is linked whole
// (CMake's WHOLE_ARCHIVE), so every registrar runs in every binary.
struct TemplateEntry {
  std::string op;           // "gemm"
  std::string name;         // "gemm_nn"
  std::string shape_help;   // "M,N,K"
  std::string description;  // of the operator, as its default template's entry says it
  bool op_default = false;  // the template an operator gets when none is named
  std::function<std::unique_ptr<Template>(const std::vector<int64_t>& shape)> make;
  // The template an operator gets when none is named and the target is Hopper (sm_90): the
  // same computation and layouts as the op_default one, on the instructions that reach that
  // architecture's tensor-core rate (wgmma; mma.sync runs at about half of it there).
  bool sm90_default = false;
  TaskParams params;  // every field set
};
struct TemplateRegistrar {
  explicit TemplateRegistrar(TemplateEntry entry);
};

struct OpInfo {
  std::string op;
  std::vector<std::string> templates;  // the default first, then as registered
  std::string shape_help;              // e.g. "M,N,K"
  std::string description;
  std::string sm90_default;  // the default on sm_90 where it is another template, else empty
};
// Every registered operator, by name.
std::vector<OpInfo> list_ops();
// The template `op` gets when none is named, for the target `arch` ("sm_90"; empty: the
// operator's default for any architecture). TaskError for an unknown operator.
std::string default_template(const std::string& op, const std::string& arch = "");
// What a user asks for: `op` a computation ("gemm") or an operator name ("gemm_fp16", which fixes
// the dtype; the names of before, which logs hold), and the task parameters given (empty: those
// of the operator's default template for the target), or a template by name.
struct TaskRequest {
  std::string op, dtype, out_dtype, layout, family, template_name;
};
// The registered template a request names: its operator and template name. TaskError, one line
// naming what the computation supports, when none has those parameters or a named template
// contradicts them.
struct ResolvedTemplate {
  std::string op, name;
};
ResolvedTemplate resolve_template(const TaskRequest& request, const std::string& arch);
// A registered template's parameters; TaskError for an unknown name.
const TaskParams& template_params(const std::string& name);
// `template_name` empty: default_template(op, arch).
std::unique_ptr<Template> make_template(const std::string& op, const std::vector<int64_t>& shape,
                                        const std::string& template_name = "",
                                        const std::string& arch = "");

// `shape` when it has `sizes` entries, else TaskError ("gemm takes a shape M,N,K (3 sizes),
// got 2 sizes"): the check every fixed-rank operator's factory starts with.
std::vector<int64_t> shape_of_size(const std::string& op, const std::vector<int64_t>& shape,
                                   size_t sizes, const char* help);

// A GEMM's B: [K,N] (nn) or stored [N,K] (nt, as dense layers keep it).
enum class GemmLayout { nn, nt };
// TaskError unless M, N, K >= 1, each at most 2^20, and each matrix under 2^31 elements (32-bit
// indices): the check every GEMM template's constructor starts with.
void check_gemm_shape(const std::string& op, int64_t m, int64_t n, int64_t k);

// Parses "127,255,63" into non-negative sizes (each template checks its own ranges, e.g.
// GEMM needs sizes >= 1, a convolution's padding may be 0); TaskError on anything else.
std::vector<int64_t> parse_shape(const std::string& text);

}  // namespace cutune
