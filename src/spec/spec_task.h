#pragma once
// The tuning task a KernelSpec defines: its configuration space (the T1 parameters and
// conditions), and for one configuration the source as compiled (the parameters as
// preprocessor defines in front of the user's unchanged file, as Kernel Tuner puts them), the
// launch (Kernel Tuner's rule unless the spec asks for cutune's: kernel_spec.h), the argument
// sizes, and whether the launch fits a device.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/runtime/device.h"
#include "src/space/config_space.h"
#include "src/spec/kernel_spec.h"

namespace cutune::spec {

// One configuration made concrete.
struct SpecInstance {
  std::vector<int64_t> params;      // one value per parameter, in the spec's order
  LaunchSpec launch;                // grid, block, dynamic shared memory
  std::vector<int64_t> elements;    // per spec argument (1 for scalars)
  std::vector<double> fill_values;  // per spec argument: FillValue, evaluated
  std::string defines;              // what Kernel Tuner puts in front of the source
  std::vector<std::string> unroll_removed;  // loop_unroll_factor parameters set to 0
  std::string kernel_expression;    // the kernel's name, with its template arguments
};

class SpecTask {
 public:
  // Loads the spec; reads the kernel file when it exists (`source_available()`).
  explicit SpecTask(KernelSpec spec);

  const KernelSpec& spec() const { return spec_; }
  const ConfigSpace& space() const { return *space_; }
  bool source_available() const { return !source_.empty(); }
  const std::string& source() const;  // SpecError naming the missing file

  std::vector<int64_t> params_of(const Config& config) const;
  Config config_of(const std::vector<int64_t>& params) const;  // SpecError if not in the space
  // What the search measures first: the reference configuration (the spec's Reference
  // Configuration, else every parameter's default) when it is a valid point of the space, the
  // user's own starting point; empty otherwise.
  std::vector<Config> seed_configs() const;

  // Evaluates the spec's expressions for `params`. SpecError (one line naming the field) when
  // an expression is not an integer or a size is negative.
  SpecInstance instantiate(const std::vector<int64_t>& params) const;
  SpecInstance instantiate(const Config& config) const { return instantiate(params_of(config)); }

  // Why this launch cannot run on `device` (block or grid dimension, threads per block,
  // shared memory), or nullopt.
  static std::optional<std::string> launch_violation(const SpecInstance& instance,
                                                     const DeviceInfo& device);

  // The translation unit NVRTC compiles: Kernel Tuner's defines (grid_size_x/y/z,
  // block_size_x/y/z, every parameter, kernel_tuner), then the user's file unchanged (with
  // #line, so diagnostics name the user's lines), with compile_options(). Kernel parameters
  // follow the spec's arguments, constant-memory ones included (Kernel Tuner passes them and
  // fills their symbol). kernel_name is an NVRTC name expression: the kernel's name, or with
  // TemplateArguments "name<args>". `kernel_name` / `file_source` select another kernel (a
  // reference kernel) compiled with the same defines.
  CudaSource nvrtc_source(const SpecInstance& instance, const std::string& kernel_name = {},
                          const std::string& file_source = {}) const;
  // The same for the CPU emulator: the source above plus an entry function that copies the
  // constant-memory arguments into their __constant__ symbols (once per run) and calls the
  // kernel with every argument, in order.
  CudaSource emulator_source(const SpecInstance& instance, const std::string& kernel_name = {},
                             const std::string& file_source = {}) const;
  // The spec's CompilerOptions, then the kernel's folder as an include path.
  std::vector<std::string> compile_options() const;

 private:
  void warn_unused_local_size();

  KernelSpec spec_;
  std::unique_ptr<ConfigSpace> space_;
  std::string source_;
};

}  // namespace cutune::spec
