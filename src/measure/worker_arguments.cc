#include "src/measure/worker_arguments.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "src/measure/correctness.h"
#include "src/measure/worker_gpu.h"
#include "src/runtime/cuda_check.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/tensor_map_encode.h"

namespace cutune {

void guarded(const std::function<void()>& call, bool at_launch, const char* what) {
  try {
    call();
  } catch (const CudaError& e) {
    if (e.library() != "CUDA driver")
      throw CandidateFailure{MeasureStatus::runtime_error, true,
                             fmt::format("{}: {}", what, e.what())};
    const CudaFault f = classify_cuda_error(e.code(), at_launch);
    throw CandidateFailure{f.status, f.poisoned, fmt::format("{}: {}", what, e.description())};
  }
}

DeviceArguments::DeviceArguments(const WorkerTask& task,
                                 const std::function<std::vector<char>(int64_t)>& take)
    : arguments_(task.arguments) {
  const size_t n = arguments_.size();
  initial_.assign(n, {});
  buffers_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const WorkerArgument& a = arguments_[i];
    std::vector<char> bytes;
    if (a.init == ArgInit::blob) bytes = take(a.bytes());
    if (a.init == ArgInit::seeded)
      bytes = encode_values(input_values(task.seed, int(i), a.elements, a.elem), a.elem);
    if (a.kind == ArgKind::scalar) {
      initial_[i] = std::move(bytes);
      continue;
    }
    buffers_[i].emplace(size_t(std::max<int64_t>(a.bytes(), 1)));
    // A seeded input keeps no host copy; a constant's fills its symbol at every load.
    if (a.init == ArgInit::seeded && !a.is_output && !a.reset_each_run &&
        a.kind == ArgKind::buffer) {
      if (!bytes.empty()) buffers_[i]->upload(bytes.data());  // an input: no host copy kept
      continue;
    }
    initial_[i] = std::move(bytes);
    reset(i);
  }
}

void DeviceArguments::reset(size_t i) {
  if (!buffers_[i] || arguments_[i].bytes() == 0) return;
  switch (arguments_[i].init) {
    case ArgInit::nan:
      buffers_[i]->fill_bytes(0xff);
      return;
    case ArgInit::zero:
      buffers_[i]->fill_bytes(0);
      return;
    case ArgInit::seeded:
    case ArgInit::blob:
      buffers_[i]->upload(initial_[i].data());
      return;
  }
}

void DeviceArguments::reset_outputs() {
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (arguments_[i].is_output) reset(i);
}

void DeviceArguments::reset_each_run() {
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (arguments_[i].reset_each_run) reset(i);
}

std::vector<float> DeviceArguments::download_values(size_t i) const {
  std::vector<char> bytes(buffers_[i]->bytes());
  buffers_[i]->download(bytes.data());
  return decode_values(bytes.data(), arguments_[i].elements, arguments_[i].elem);
}

LoadedKernel DeviceArguments::load(
    const std::vector<char>& cubin, const std::string& kernel, const std::string& arch,
    const LaunchSpec& launch, const std::vector<int>& arg_indices,
    const std::vector<std::optional<ir::TensorMapDesc>>& maps) const {
  const DriverApi& api = require_driver();
  LoadedKernel l;
  guarded(
      [&] {
        l.module.emplace(Cubin{cubin, kernel, arch});
        l.function = l.module->function(kernel, launch.dynamic_smem_bytes);
      },
      true, "loading the kernel");
  // Constant memory belongs to the module: every load gets the arguments' bytes.
  for (size_t i = 0; i < arguments_.size(); ++i) {
    const WorkerArgument& a = arguments_[i];
    if (a.kind != ArgKind::constant) continue;
    CUdeviceptr symbol = 0;
    size_t bytes = 0;
    if (api.cuModuleGetGlobal_v2(&symbol, &bytes, l.module->get(), a.name.c_str()) != CUDA_SUCCESS)
      throw CandidateFailure{MeasureStatus::launch_error, false,
                             fmt::format("the kernel has no __constant__ symbol '{}'", a.name)};
    if (bytes < size_t(a.bytes()))
      throw CandidateFailure{MeasureStatus::launch_error, false,
                             fmt::format("__constant__ '{}' has {} bytes; the task fills {}",
                                         a.name, bytes, a.bytes())};
    guarded(
        [&] {
          CUTUNE_CU_CHECK(api.cuMemcpyHtoD_v2(symbol, initial_[i].data(), size_t(a.bytes())));
        },
        false, "filling constant memory");
  }
  l.maps.reserve(arg_indices.size());
  for (size_t p = 0; p < arg_indices.size(); ++p) {
    const int index = arg_indices[p];
    if (index < 0 || size_t(index) >= arguments_.size())
      throw CandidateFailure{MeasureStatus::launch_error, false,
                             fmt::format("kernel parameter {} names argument {} of the task's {}",
                                         p, index, arguments_.size())};
    const WorkerArgument& a = arguments_[size_t(index)];
    std::array<char, 16> v{};
    if (a.kind == ArgKind::scalar) {
      if (a.bytes() > int64_t(v.size()))
        throw CandidateFailure{MeasureStatus::launch_error, false,
                               fmt::format("scalar '{}' of {} bytes", a.name, a.bytes())};
      std::memcpy(v.data(), initial_[size_t(index)].data(), size_t(a.bytes()));
    } else {
      const CUdeviceptr address = pointer(size_t(index));
      std::memcpy(v.data(), &address, sizeof address);
    }
    l.values.push_back(v);
    // A tensor-map parameter gets the map encoded over its buffer, in place of the pointer.
    if (p < maps.size() && maps[p]) {
      if (a.kind != ArgKind::buffer)
        throw CandidateFailure{MeasureStatus::launch_error, false,
                               fmt::format("a tensor map over scalar '{}'", a.name)};
      try {
        guarded(
            [&] {
              l.maps.push_back(
                  encode_tensor_map(api, *maps[p], a.elements, pointer(size_t(index))));
            },
            true, "encoding a tensor map");
      } catch (const std::invalid_argument& e) {
        throw CandidateFailure{MeasureStatus::launch_error, false, e.what()};
      }
    }
  }
  size_t next_map = 0;
  for (size_t p = 0; p < l.values.size(); ++p)
    l.args.push_back(p < maps.size() && maps[p] ? static_cast<void*>(&l.maps[next_map++])
                                                : static_cast<void*>(l.values[p].data()));
  return l;
}

}  // namespace cutune
