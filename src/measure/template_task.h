#pragma once
// A template's kernel task for the GPU measurer: each configuration lowered to CUDA C (the
// template's IR, simplified and verified) with its parameters bound to the template's
// tensors; the worker's tensors filled from the seed, checked against cuBLAS for a GEMM and
// against the template's CPU reference otherwise, with the template's declared baseline.

#include <memory>
#include <string>
#include <vector>

#include "kernels/template.h"
#include "src/measure/kernel_task.h"

namespace cutune {

// Fills request.args with the index in `tensors` of each of `source`'s parameters (a scalar
// parameter: tensors.size() plus its index in `scalars`), and request.maps (indexed like args;
// empty when there is none) with the description of each tensor-map parameter, which the
// worker encodes over the tensor it names. Returns why a parameter is neither a tensor, a map
// over one nor a scalar ("" when all are). With `runtime_m`, the scalar parameter "M" takes the
// argument after the tensors and `scalars` (worker_task's, for a template of run-time M).
std::string bind_kernel_arguments(const CudaSource& source, const std::vector<TensorSpec>& tensors,
                                  KernelInstance& instance,
                                  const std::vector<ScalarSpec>& scalars = {},
                                  bool runtime_m = false);
inline constexpr const char* kRuntimeMArgument = "M";

// What the worker gets for `tmpl`: its tensors as arguments by storage type (inputs from the
// seed, outputs as NaN or, split-K, zero, or from the seed and restored before every launch
// where the kernel reads them (TensorSpec::initial); each output's tolerance for the
// reduction length), then its scalars (their values first in the blob),
// the template's declared baseline (when `allow_baseline`), and the reference: the
// baseline's own for a GEMM (cuBLAS on the GPU), else the template's CPU reference on the
// same rounded inputs, whose outputs fill `expected` (the task's blob).
WorkerTask worker_task(const Template& tmpl, const GpuMeasureOptions& options,
                       std::vector<char>* expected, bool allow_baseline = true);

// `tmpl` must outlive the task.
std::unique_ptr<KernelTask> template_kernel_task(const Template& tmpl);

}  // namespace cutune
