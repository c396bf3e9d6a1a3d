#pragma once
// The tuning task a KernelSpec defines: its configuration space (the T1 parameters and
// conditions), and for one configuration the source as compiled (the parameters as
// preprocessor defines in front of the user's unchanged file), the launch evaluated from the
// spec's expressions, the argument sizes, and whether the launch fits a device.

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
  std::string defines;              // "#define P V\n" per parameter
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

  // The translation unit NVRTC compiles: defines, then the user's file unchanged (with #line,
  // so diagnostics name the user's lines). Kernel parameters follow the spec's arguments,
  // constant-memory ones excluded. The kernel must be extern "C" unless it is a template,
  // whose kernel_name is then the name expression "name<args>". `kernel_name` / `file_source`
  // select another kernel (a reference kernel) compiled with the same defines.
  CudaSource nvrtc_source(const SpecInstance& instance, const std::string& kernel_name = {},
                          const std::string& file_source = {}) const;
  // The same for the CPU emulator: the source above plus an entry function that copies the
  // constant-memory arguments into their __constant__ symbols (once per run) and calls the
  // kernel; its parameters are all the spec's arguments, in order. `kernel_name` / `file`
  // select another kernel (a reference kernel) compiled with the same defines.
  CudaSource emulator_source(const SpecInstance& instance, const std::string& kernel_name = {},
                             const std::string& file_source = {}) const;

 private:
  KernelSpec spec_;
  std::unique_ptr<ConfigSpace> space_;
  std::string source_;
};

}  // namespace cutune::spec
