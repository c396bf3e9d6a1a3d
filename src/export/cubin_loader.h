#pragma once
// A header-only loader for kernels written by `cutune export`: reads manifest.json, loads a
// kernel's .cubin with the CUDA driver API and launches it with the manifest's grid, block and
// shared memory. Needs only <cuda.h>, libcuda and nlohmann/json (header-only); nothing of
// cutune, so it can be copied into any program.
//
//   cuInit(0); ... make a context current ...
//   auto kernels = cutune_loader::read_manifest("exported/");
//   cutune_loader::LoadedKernel gemm(kernels.at(0), "exported/");
//   void* args[] = {&c, &a, &b};        // device pointers, in manifest "params" order
//   gemm.launch(args);                  // on the default stream
//
// Errors throw std::runtime_error with the driver's error name.

#include <cuda.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cutune_loader {

struct Param {
  std::string name;
  std::string type;  // "float32", ...
  bool pointer = true;
  bool is_const = false;
  int64_t elements = 0;  // pointers: elements of the buffer
  int64_t bytes = 0;     // pointers: bytes of the buffer; scalars: of the value
};

struct KernelManifest {
  std::string name;    // file stem
  std::string kernel;  // extern "C" entry name
  std::string cubin;   // file name, relative to the manifest's folder
  std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
  unsigned static_smem_bytes = 0, dynamic_smem_bytes = 0;
  std::vector<Param> params;
  double flops = 0, time_s = 0;
  nlohmann::json raw;  // the whole entry (task, config, cuBLAS time, ...)
};

inline std::vector<KernelManifest> read_manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  if (!in) throw std::runtime_error("cannot open " + dir + "/manifest.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<KernelManifest> out;
  for (const nlohmann::json& e : j.at("kernels")) {
    KernelManifest k;
    k.name = e.at("name").get<std::string>();
    k.kernel = e.at("kernel").get<std::string>();
    k.cubin = e.at("cubin").get<std::string>();
    for (int i = 0; i < 3; ++i) {
      k.grid[i] = e.at("grid").at(i).get<unsigned>();
      k.block[i] = e.at("block").at(i).get<unsigned>();
    }
    k.static_smem_bytes = e.at("shared_bytes").at("static").get<unsigned>();
    k.dynamic_smem_bytes = e.at("shared_bytes").at("dynamic").get<unsigned>();
    for (const nlohmann::json& p : e.at("params"))
      k.params.push_back({p.at("name").get<std::string>(), p.at("type").get<std::string>(),
                          p.at("pointer").get<bool>(), p.at("const").get<bool>(),
                          p.at("elements").get<int64_t>(), p.at("bytes").get<int64_t>()});
    k.flops = e.value("flops", 0.0);
    k.time_s = e.value("time_s", 0.0);
    k.raw = e;
    out.push_back(std::move(k));
  }
  return out;
}

inline void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  throw std::runtime_error(std::string(what) + " failed: " + (name ? name : "unknown CUDA error"));
}

// A loaded kernel in the context current at construction. Move-only; unloads on destruction.
class LoadedKernel {
 public:
  LoadedKernel(KernelManifest manifest, const std::string& dir) : manifest_(std::move(manifest)) {
    std::ifstream in(dir + "/" + manifest_.cubin, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + dir + "/" + manifest_.cubin);
    const std::vector<char> image((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    check(cuModuleLoadData(&module_, image.data()), "cuModuleLoadData");
    check(cuModuleGetFunction(&function_, module_, manifest_.kernel.c_str()),
          "cuModuleGetFunction");
    if (manifest_.dynamic_smem_bytes > 48 * 1024)
      check(cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(manifest_.dynamic_smem_bytes)),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  }
  ~LoadedKernel() {
    if (module_ != nullptr) cuModuleUnload(module_);
  }
  LoadedKernel(LoadedKernel&& o) noexcept
      : manifest_(std::move(o.manifest_)),
        module_(std::exchange(o.module_, nullptr)),
        function_(std::exchange(o.function_, nullptr)) {}
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  LoadedKernel& operator=(LoadedKernel&&) = delete;

  // `args[i]` points at the value of parameter i (for a buffer: a CUdeviceptr).
  void launch(void** args, CUstream stream = nullptr) const {
    const KernelManifest& m = manifest_;
    check(cuLaunchKernel(function_, m.grid[0], m.grid[1], m.grid[2], m.block[0], m.block[1],
                         m.block[2], m.dynamic_smem_bytes, stream, args, nullptr),
          "cuLaunchKernel");
  }

  const KernelManifest& manifest() const { return manifest_; }
  CUfunction function() const { return function_; }

 private:
  KernelManifest manifest_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

}  // namespace cutune_loader
