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
#include <utility>
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
  // Outputs only: the kernel reads the output's initial value (C with an epilogue's beta), so
  // whoever launches it fills it like an input (from the seed) and restores it before every
  // launch; the reference gets those values in place of the output's.
  bool initial = false;
};

// One scalar (by-value) kernel argument, after the tensors: its name, type, and the value a
// check passes (an epilogue's alpha and beta: the kernel serves any value, kernels/epilogue.h).
struct ScalarSpec {
  std::string name;
  ir::Type type;
  double value = 0;
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
  // The kernel's scalar parameters, after the tensors, in parameter order; none by default.
  virtual std::vector<ScalarSpec> scalars() const { return {}; }
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
  // A template of run-time M (TaskParams::runtime_m): its kernels take M as their scalar
  // parameter "M" (int32), guard every row against it and serve any M from 1 up (the grid
  // and the sizes of A and C follow it at launch, launch_grid.h's at_m). This returns the M
  // this task passes (its shape's); nullopt: every size is a constant of the kernel.
  virtual std::optional<int64_t> runtime_m() const { return std::nullopt; }
  // For such a template, how `config`'s grid and buffers follow M (LaunchSpec::m_rows and
  // its fields, KernelParam::m_row_elements by parameter name); lower() puts it in the source.
  struct MRule {
    uint32_t axis = 0, rows = 0, row_blocks = 0;
    std::vector<std::pair<std::string, int64_t>> row_elements;  // parameter, elements per row
  };
  virtual MRule runtime_m_rule(const Config& /*config*/) const { return {}; }
};

// What a template computes, as task parameters (operators as data): the computation ("gemm",
// "conv2d", "depthwise_conv2d"), the inputs' and the output's element type ("fp32", "fp16",
// "bf16"), the layout ("nn" or "nt": GEMM's B stored [K,N] or [N,K]; "nchw" or "nhwc" for a
// convolution's input) and the instruction family of its schedule ("simt": FMA; "mma":
// mma.sync tensor cores; "wgmma": Hopper's warpgroup MMA), and the fused epilogue, as canonical
// text ("bias,gelu"; empty: none; kernels/epilogue.h). A family's `supported` combinations have
// no epilogue: every family takes every epilogue its computation allows.
struct TaskParams {
  std::string computation, dtype, out_dtype, layout, family;
  // M is a run-time scalar of the kernels (Template::runtime_m): one kernel serves a range of
  // M (dispatch tables). Only families with TemplateFamily::runtime_m build it; its template
  // name ends in _dynm, so that its records never pass for the exact-shape kernel's.
  bool runtime_m = false;
  std::string epilogue = {};  // initialised, so that the five-field braces of before still read
  bool operator==(const TaskParams&) const = default;
};

// One schedule family of one computation (gemm on mma.sync, conv2d on FMA units): the
// combinations of task parameters it builds and one factory for all of them. Each family's file
// in kernels/ registers it with a static registrar, so that a new family is one new file:
//
//   const FamilyRegistrar kGemmSimt{{.computation = "gemm", .family = "simt",
//                                    .shape_help = "M,N,K", .description = "...",
//                                    .supported = combinations("gemm", "simt", ...),
//                                    .make = [](const TaskParams& p, const auto& shape) {...}}};
//
// kernels/ is linked whole (CMake's WHOLE_ARCHIVE), so every registrar runs in every binary.
struct TemplateFamily {
  using Factory = std::function<std::unique_ptr<Template>(const TaskParams& params,
                                                          const std::vector<int64_t>& shape)>;
  std::string computation;  // "gemm"
  std::string family;       // "mma"
  std::string shape_help;   // "M,N,K": the same for every family of a computation
  std::string description;  // what its kernels are, in one sentence
  // The architecture its instructions are made for ("sm_90" for wgmma, which needs sm_90a), or
  // empty. Where a computation's dtype has several families, a target of this architecture gets
  // this one by default, any other target the family with none.
  std::string native_arch;  // kAnyArch: none
  // Every combination it builds (each field set; computation and family as above). The first of
  // a dtype is the family's default for that dtype.
  std::vector<TaskParams> supported;
  // It also builds each of `supported` with TaskParams::runtime_m; others refuse it.
  bool runtime_m = false;
  // Whether its templates take a fused epilogue (every one kernels/epilogue.h parses, given to
  // `make` in TaskParams::epilogue); without, a request with one is a TaskError.
  bool epilogue = false;
  // The template for one of `supported` (with its epilogue and run-time M) and a shape;
  // TaskError (one line) for a bad shape.
  Factory make;
};
inline constexpr const char* kAnyArch = "";
struct FamilyRegistrar {
  explicit FamilyRegistrar(TemplateFamily family);
};

// The combinations of a family, nested in this order: each of `dtypes`, its output types (fp32,
// and the input type itself where `narrow_out`), each of `layouts`.
std::vector<TaskParams> combinations(const std::string& computation, const std::string& family,
                                     const std::vector<std::string>& dtypes,
                                     const std::vector<std::string>& layouts, bool narrow_out);

// Every registered family, by computation (alphabetical), a computation's in the order simt, mma,
// wgmma (the order the hardware gained them), then any other by name.
std::vector<const TemplateFamily*> template_families();

// Names. A tuning log identifies a task by an operator name and a template name (TaskKey.op and
// TaskKey.template_name), as it did before operators were data; new records keep writing them:
//   operator_name(p): the computation, with _<dtype> unless fp32 ("gemm", "gemm_fp16");
//   template_name(p): the operator name; _<family> unless it is simt for fp32 or mma for 16
//   bits (the one family each had at first); _<layout>; _out16 for an output in the 16-bit
//   input type ("gemm_nt", "gemm_fp16_nn_out16", "conv2d_bf16_wgmma_nhwc"); with an epilogue,
//   _ep_ and its ops joined by _ ("gemm_nt_ep_bias_gelu"), so that no record of one epilogue
//   is read as another's (without one, every name is as it was); last, _dynm for a run-time M
//   ("gemm_fp16_wgmma_nt_dynm", "gemm_nt_ep_bias_dynm").
// For each combination that existed before these are exactly its names of then, so a record
// means the same task whichever code wrote it, and TaskKeys of old and new records compare
// equal: resume and transfer learning take old logs unchanged (which is why TaskKey.op stays the
// dtyped operator name rather than the bare computation). The alias table below is the way
// back, frozen: every name a log written before may hold, with what it meant, so that reading an
// old log never depends on the scheme above; a later combination needs no alias, its canonical
// name is looked up among the families' combinations. tests/kernels/test_template_registry.cc
// checks that every alias is the combination whose canonical name it is and builds it.
std::string operator_name(const TaskParams& p);
std::string template_name(const TaskParams& p);
struct TemplateAlias {
  std::string op, name;  // as logs hold them: "gemm_fp16", "gemm_fp16_nt"
  TaskParams params;
};
const std::vector<TemplateAlias>& template_aliases();
// The parameters a template name (an alias or a canonical name) stands for; TaskError for an
// unknown name.
TaskParams template_params(const std::string& name);
// The canonical names of the supported combinations of `computation`, of one family and dtype
// where those are not empty, in listing order.
std::vector<std::string> template_names(const std::string& computation,
                                        const std::string& family = "",
                                        const std::string& dtype = "");

// The combination a computation gets for `dtype` where nothing else is asked, on `arch`
// ("sm_90"; empty: any other); TaskError where the computation has no template for `dtype`.
TaskParams default_params(const std::string& computation, const std::string& dtype,
                          const std::string& arch = "");

// What a user asks for: `op` a computation ("gemm") or an operator name ("gemm_fp16", which fixes
// the dtype; the names of before, which logs hold), and the task parameters given (empty: those
// of the computation's default for the dtype and the target), or a template by name.
struct TaskRequest {
  std::string op, dtype, out_dtype, layout, family, template_name;
  bool runtime_m = false;  // TaskParams::runtime_m
  std::string epilogue = {};
};
// The combination a request names, with its operator and template names. TaskError, one line
// naming what the computation supports, for an unknown operator or template, for parameters no
// family supports, for a named template that contradicts a parameter or the operator, and for a
// bad or unsupported epilogue.
struct ResolvedTemplate {
  std::string op, name;
  TaskParams params;
};
ResolvedTemplate resolve_template(const TaskRequest& request, const std::string& arch);
// resolve_template({op}, arch).name: the template `op` gets when none is named.
std::string default_template(const std::string& op, const std::string& arch = "");
// The template of a supported combination for `shape`.
std::unique_ptr<Template> make_template(const TaskParams& params,
                                        const std::vector<int64_t>& shape);
// The template an operator name (or computation) and a template name (an alias; empty: the
// default for `arch`) stand for, as logs name it.
std::unique_ptr<Template> make_template(const std::string& op, const std::vector<int64_t>& shape,
                                        const std::string& template_name = "",
                                        const std::string& arch = "");

// `shape` when it has `sizes` entries, else TaskError ("gemm takes a shape M,N,K (3 sizes),
// got 2 sizes"): the check every fixed-rank operator's factory starts with.
std::vector<int64_t> shape_of_size(const std::string& op, const std::vector<int64_t>& shape,
                                   size_t sizes, const char* help);

// A GEMM's B: [K,N] (nn) or stored [N,K] (nt, as dense layers keep it).
enum class GemmLayout { nn, nt };
// A task parameter as the templates take it: "nn"/"nt"; "fp32"/"fp16"/"bf16".
GemmLayout gemm_layout(const std::string& layout);
ir::DType element_type(const std::string& dtype);
// TaskError unless M, N, K >= 1, each at most 2^20, and each matrix under 2^31 elements (32-bit
// indices): the check every GEMM template's constructor starts with.
void check_gemm_shape(const std::string& op, int64_t m, int64_t n, int64_t k);

// Parses "127,255,63" into non-negative sizes (each template checks its own ranges, e.g.
// GEMM needs sizes >= 1, a convolution's padding may be 0); TaskError on anything else.
std::vector<int64_t> parse_shape(const std::string& text);

}  // namespace cutune
