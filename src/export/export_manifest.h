#pragma once
// What `cutune export` writes for one tuned kernel, and reads back: <name>.cubin, <name>.cu and
// an entry of manifest.json describing how to launch it. The manifest is plain JSON so that
// any host program can use the kernel; src/export/cubin_loader.h is a header-only reader.
//
//   {"version": 1, "kernels": [{
//     "name": "gemm_nn_1024x1024x1024_sm_90", "kernel": "<the symbol to load>",
//     "cubin": "<name>.cubin", "source": "<name>.cu",
//     "task": {"op": "gemm", "shape": [..], "dtype": "float32", "template": "gemm_nn",
//              "arch": "sm_90", "device": "NVIDIA H200"},
//     "config": {"index": 123, "knobs": {..}},
//     "grid": [x,y,z], "block": [x,y,z],
//     "shared_bytes": {"static": s, "dynamic": d},
//     "registers": r,
//     "params": [{"name": "C", "type": "float32", "pointer": true, "const": false,
//                 "elements": n, "bytes": 4n}, ...],
//     "flops": f, "time_s": t, "gflops": g,
//     "baseline": "cudnn" | null, "baseline_s": b | null,
//     "constants": [{"name", "type", "elements"}, ...],      (a user kernel's, when it has any)
//     "runtime_m": {"rows", "row_blocks", "axis"}}],        (a kernel of run-time M; its A and
//                                                            C params have "m_row_elements")
//    "dispatch": {"op", "template", "n", "k",                (export --table only)
//                 "table": [{"m_lo", "m_hi", "kernel"}, ...]}}
//   baseline_s: the median time of the task's vendor-library baseline measured in the same
//   harness, where the record carries it (the worker adds it to a convolution's records).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/codegen/cuda_source.h"
#include "src/runtime/compile_result.h"

namespace cutune {

struct ExportedKernel {
  std::string name;       // file stem, unique within a manifest
  nlohmann::json task;    // op, shape, dtype, template, arch, device
  nlohmann::json config;  // index, knobs
  CudaSource source;      // kernel name, code, params, launch
  std::string symbol;     // the name to load (a C++ kernel's lowered name); empty: source's
  int registers = -1;
  double flops = 0;
  double time_s = 0;                    // measured median
  std::optional<std::string> baseline;  // "cudnn", "cublas", ...
  std::optional<double> baseline_s;     // its median, seconds
  // Output buffers to zero before every launch: the template's configurations with split-K
  // add into them (TensorSpec::zero_init); "zero_init": true on those parameters.
  std::vector<std::string> zero_init;
  // Outputs the kernel also reads (C with an epilogue's beta): the caller fills them, and
  // restores them before every launch that must compute the same; "initial": true on those.
  std::vector<std::string> initial;
  // __constant__ symbols a user kernel reads, to fill before launching: name, type, elements.
  // Each is also the kernel parameter of its name (a buffer with the same bytes), as Kernel
  // Tuner passes constant-memory arguments.
  nlohmann::json constants = nlohmann::json::array();
};

// "gemm_nn_1024x1024x1024_sm_90": letters, digits and '_' only.
std::string export_name(const std::string& template_name, const std::vector<int64_t>& shape,
                        const std::string& arch);

nlohmann::json manifest_entry(const ExportedKernel& kernel);

// Writes <dir>/<name>.cubin and <name>.cu for each kernel and <dir>/manifest.json for all,
// creating `dir`. Each file is written beside and renamed into place (src/base/output_file.h:
// a file of that name is replaced, a directory, FIFO or device there is refused).
// std::runtime_error (one line) when a file cannot be written.
// `dispatch` (not null): the manifest's dispatch table (export_table.h).
void write_export(const std::filesystem::path& dir,
                  const std::vector<std::pair<ExportedKernel, Cubin>>& kernels,
                  const nlohmann::json& dispatch = nullptr);

}  // namespace cutune
