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
// Kernels that load through TMA (the wgmma templates) take tensor maps as well as pointers:
// such a parameter has type "tensor_map" and a "tensor_map" description of the buffer it
// addresses. launch_buffers encodes them itself from the buffers by name:
//
//   gemm.launch_buffers({{"C", c}, {"A", a}, {"B", b}});
//
// (encode_tensor_map does one by hand, for launch(args).) An output parameter with "zero_init"
// (the GEMMs whose split-K configurations add into C) must hold zeros at every launch:
// launch_buffers zeroes it first; a caller of launch(args) does it itself. A kernel with a fused
// epilogue (manifest "task"."epilogue", e.g. "alpha,beta,bias,gelu") takes its extra buffers
// by name ("bias" [N], "residual" [M,N]) and its scalars ("alpha", "beta", float32) by value:
//
//   gemm.launch_buffers({{"C", c}, {"A", a}, {"B", b}, {"bias", bias}}, stream,
//                       {{"alpha", 0.5f}, {"beta", 1.0f}});
//
// With beta, C is read as well as written (its param says "initial": true): the caller fills
// it, and restores it before a launch that must compute the same again. Errors throw
// std::runtime_error with the driver's error name, or a line saying what is missing.
//
// A dispatch table (`cutune export --table`, from `cutune tune --shape M=lo..hi,N,K`) holds
// kernels of run-time M, each serving an interval of M; read_dispatch reads it and
// DispatchedGemm picks the kernel for a given M and launches it with that M:
//
//   cutune_loader::DispatchedGemm gemm("exported/");
//   gemm.launch(m, {{"C", c}, {"A", a}, {"B", b}});   // A is m x K, C m x N

#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cutune_loader {

// How to encode a tensor-map parameter (cuTensorMapEncodeTiled, rank 2, no interleave,
// out-of-bounds elements read as zero).
struct TensorMapParam {
  std::string buffer;  // the parameter name of the buffer it addresses, e.g. "A"
  std::string dtype;   // "float16", "bfloat16", "float32"
  std::array<uint64_t, 2> dims{1, 1};  // elements, innermost first
  uint64_t row_stride_bytes = 0;       // bytes from one dims[1] index to the next
  std::array<uint32_t, 2> box{1, 1}, element_strides{1, 1};
  int swizzle_bytes = 0;       // 0, 32, 64, 128
  int l2_promotion_bytes = 0;  // 0, 64, 128, 256
};

struct Param {
  std::string name;
  std::string type;  // "float32", ..., or "tensor_map"
  bool pointer = true;
  bool is_const = false;
  int64_t elements = 0;  // pointers: elements of the buffer
  int64_t bytes = 0;     // pointers: bytes of the buffer; scalars: of the value; maps: 128
  bool is_tensor_map = false;
  TensorMapParam tensor_map;  // when is_tensor_map
  bool zero_init = false;     // an output to zero before every launch (absent: false)
  // A kernel of run-time M: a buffer of this many elements a row of M, or a tensor map whose
  // dims[1] is M (absent: 0, the parameter does not follow M).
  int64_t m_row_elements = 0;
  bool initial = false;       // an output the kernel also reads (C with beta; absent: false)
};

struct KernelManifest {
  std::string name;    // file stem
  std::string kernel;  // extern "C" entry name
  std::string cubin;   // file name, relative to the manifest's folder
  std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
  unsigned static_smem_bytes = 0, dynamic_smem_bytes = 0;
  // A persistent kernel (> 0): `grid` is the most blocks it can use, and it is launched with
  // min(grid[0], SMs x this) blocks along x on the GPU of the current context (grid_for).
  unsigned persistent_blocks_per_sm = 0;
  // Blocks along x of a thread-block cluster (1: none). The cubin holds the cluster shape
  // (__cluster_dims__), so cuLaunchKernel makes the clusters; grid[0] stays a multiple of it.
  unsigned cluster_x = 1;
  // A kernel of run-time M ("runtime_m" in the manifest; m_rows > 0): its scalar parameter "M"
  // and grid[m_axis] = ceil(M / m_rows) x m_row_blocks blocks (at_m); `grid` is for the M it
  // was exported at.
  unsigned m_rows = 0, m_row_blocks = 0, m_axis = 0;
  std::vector<Param> params;
  std::string epilogue;  // the fused epilogue's ops ("bias,gelu"); empty: none
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
    k.persistent_blocks_per_sm = e.value("persistent_blocks_per_sm", 0u);
    if (e.contains("cluster")) k.cluster_x = e.at("cluster").at(0).get<unsigned>();
    if (e.contains("runtime_m")) {
      const nlohmann::json& r = e.at("runtime_m");
      k.m_rows = r.at("rows").get<unsigned>();
      k.m_row_blocks = r.at("row_blocks").get<unsigned>();
      k.m_axis = r.at("axis").get<unsigned>();
    }
    for (const nlohmann::json& p : e.at("params")) {
      Param param;
      param.name = p.at("name").get<std::string>();
      param.type = p.at("type").get<std::string>();
      param.pointer = p.at("pointer").get<bool>();
      param.is_const = p.at("const").get<bool>();
      param.elements = p.at("elements").get<int64_t>();
      param.bytes = p.at("bytes").get<int64_t>();
      param.zero_init = p.value("zero_init", false);
      param.m_row_elements = p.value("m_row_elements", int64_t{0});
      param.initial = p.value("initial", false);
      if (p.contains("tensor_map")) {
        const nlohmann::json& m = p.at("tensor_map");
        TensorMapParam& t = param.tensor_map;
        param.is_tensor_map = true;
        t.buffer = m.at("buffer").get<std::string>();
        t.dtype = m.at("dtype").get<std::string>();
        for (int i = 0; i < 2; ++i) {
          t.dims[i] = m.at("dims").at(i).get<uint64_t>();
          t.box[i] = m.at("box").at(i).get<uint32_t>();
          t.element_strides[i] = m.at("element_strides").at(i).get<uint32_t>();
        }
        t.row_stride_bytes = m.at("row_stride_bytes").get<uint64_t>();
        t.swizzle_bytes = m.at("swizzle_bytes").get<int>();
        t.l2_promotion_bytes = m.at("l2_promotion_bytes").get<int>();
      }
      k.params.push_back(std::move(param));
    }
    if (e.contains("task")) k.epilogue = e.at("task").value("epilogue", std::string());
    k.flops = e.value("flops", 0.0);
    k.time_s = e.value("time_s", 0.0);
    k.raw = e;
    out.push_back(std::move(k));
  }
  return out;
}

// A kernel of run-time M made concrete for M = m (cutune's launch_grid.h at_m, the same rule):
// grid[m_axis] is ceil(m / m_rows) x m_row_blocks, the buffers that follow M hold m rows and
// their tensor maps m outer rows.
inline KernelManifest at_m(KernelManifest k, int64_t m) {
  if (k.m_rows == 0 || m < 1)
    throw std::runtime_error(k.name + ": M = " + std::to_string(m) +
                             (k.m_rows == 0 ? " for a kernel whose M is fixed" : " (M >= 1)"));
  k.grid[k.m_axis] =
      static_cast<unsigned>((static_cast<uint64_t>(m) + k.m_rows - 1) / k.m_rows * k.m_row_blocks);
  for (Param& p : k.params) {
    if (p.m_row_elements == 0) continue;
    if (p.is_tensor_map) {
      p.tensor_map.dims[1] = static_cast<uint64_t>(m);
    } else {
      p.bytes = p.bytes / p.elements * m * p.m_row_elements;
      p.elements = m * p.m_row_elements;
    }
  }
  return k;
}

// One row of a dispatch table: the kernel (a manifest name) that serves M in [m_lo, m_hi].
struct DispatchEntry {
  int64_t m_lo = 0, m_hi = 0;
  std::string kernel;
};

struct DispatchTable {
  std::string op, template_name;
  int64_t n = 0, k = 0;
  std::vector<DispatchEntry> entries;  // ascending, contiguous

  // The entry serving M = m; throws outside the table's M.
  const DispatchEntry& pick(int64_t m) const {
    for (const DispatchEntry& e : entries)
      if (m >= e.m_lo && m <= e.m_hi) return e;
    throw std::runtime_error("M = " + std::to_string(m) + " is outside the dispatch table's " +
                             (entries.empty() ? std::string("(empty) range")
                                              : std::to_string(entries.front().m_lo) + ".." +
                                                    std::to_string(entries.back().m_hi)));
  }
};

// The manifest's dispatch table ("dispatch"); throws when it has none.
inline DispatchTable read_dispatch(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  if (!in) throw std::runtime_error("cannot open " + dir + "/manifest.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  if (!j.contains("dispatch"))
    throw std::runtime_error(dir + "/manifest.json has no dispatch table");
  const nlohmann::json& d = j.at("dispatch");
  DispatchTable t;
  t.op = d.at("op").get<std::string>();
  t.template_name = d.at("template").get<std::string>();
  t.n = d.at("n").get<int64_t>();
  t.k = d.at("k").get<int64_t>();
  for (const nlohmann::json& e : d.at("table")) {
    t.entries.push_back({e.at("m_lo").get<int64_t>(), e.at("m_hi").get<int64_t>(),
                         e.at("kernel").get<std::string>()});
  }
  return t;
}

inline void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  throw std::runtime_error(std::string(what) + " failed: " + (name ? name : "unknown CUDA error"));
}

// The tensor map `t` describes, over the buffer at `base` (cuTensorMapEncodeTiled).
inline CUtensorMap encode_tensor_map(const TensorMapParam& t, CUdeviceptr base) {
  const CUtensorMapDataType type = t.dtype == "float16"    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                   : t.dtype == "bfloat16" ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : t.dtype == "float32"  ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                           : throw std::runtime_error(
                                                                 "tensor map of " + t.buffer +
                                                                 ": unknown dtype " + t.dtype);
  const CUtensorMapSwizzle swizzle = t.swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : t.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                     : t.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                             : CU_TENSOR_MAP_SWIZZLE_NONE;
  const CUtensorMapL2promotion l2 = t.l2_promotion_bytes == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                                    : t.l2_promotion_bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                    : t.l2_promotion_bytes == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                                                 : CU_TENSOR_MAP_L2_PROMOTION_NONE;
  cuuint64_t dims[2] = {t.dims[0], t.dims[1]};
  cuuint64_t strides[1] = {t.row_stride_bytes};
  cuuint32_t box[2] = {t.box[0], t.box[1]};
  cuuint32_t element_strides[2] = {t.element_strides[0], t.element_strides[1]};
  CUtensorMap map{};
  check(cuTensorMapEncodeTiled(&map, type, 2, reinterpret_cast<void*>(base), dims, strides, box,
                               element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled");
  return map;
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
  void launch(void** args, CUstream stream = nullptr) const { launch_as(manifest_, args, stream); }

  // A kernel of run-time M (m_rows > 0), launched for M = m with the buffers named by
  // parameter (A of m rows, C of m rows): its grid and tensor maps follow m (at_m), and m is
  // its scalar M.
  void launch_m(int64_t m, const std::map<std::string, CUdeviceptr>& buffers,
                CUstream stream = nullptr) const {
    if (m > 0x7fffffff) throw std::runtime_error(manifest_.name + ": M above 2^31 - 1");
    const int32_t value = static_cast<int32_t>(m);
    launch_with(at_m(manifest_, m), buffers, &value, {}, stream);
  }

  // The grid `m` launches with on a GPU of `sm_count` SMs: its own, or for a persistent kernel
  // at most SMs x blocks per SM blocks along x.
  static std::array<unsigned, 3> grid_for(const KernelManifest& m, int sm_count) {
    std::array<unsigned, 3> grid = m.grid;
    if (m.persistent_blocks_per_sm != 0 && sm_count > 0) {
      const unsigned long long resident =
          static_cast<unsigned long long>(sm_count) * m.persistent_blocks_per_sm;
      if (resident < grid[0]) grid[0] = static_cast<unsigned>(resident);
      // Whole clusters (a cluster's blocks walk their tiles together).
      const unsigned cluster = m.cluster_x > 1 ? m.cluster_x : 1;
      grid[0] = (grid[0] / cluster > 0 ? grid[0] / cluster : 1) * cluster;
    }
    return grid;
  }

  // The SM count of the current context's GPU, asked only for a persistent kernel.
  static int current_sm_count(const KernelManifest& m) {
    if (m.persistent_blocks_per_sm == 0) return 0;
    CUdevice device;
    check(cuCtxGetDevice(&device), "cuCtxGetDevice");
    int sms = 0;
    check(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
          "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
    return sms;
  }

  // Launches with the buffers named by parameter (a tensor map is encoded over the buffer its
  // description names) and the float32 scalars by name (an epilogue's alpha and beta), after
  // zeroing the zero_init ones on `stream`. Throws for a missing buffer or scalar, or a scalar
  // of another type (use launch(args); a kernel of run-time M: launch_m).
  void launch_buffers(const std::map<std::string, CUdeviceptr>& buffers,
                      CUstream stream = nullptr,
                      const std::map<std::string, float>& scalars = {}) const {
    launch_with(manifest_, buffers, nullptr, scalars, stream);
  }

  const KernelManifest& manifest() const { return manifest_; }
  CUfunction function() const { return function_; }

 private:
  void launch_as(const KernelManifest& m, void** args, CUstream stream) const {
    const std::array<unsigned, 3> grid = grid_for(m, current_sm_count(m));
    check(cuLaunchKernel(function_, grid[0], grid[1], grid[2], m.block[0], m.block[1], m.block[2],
                         m.dynamic_smem_bytes, stream, args, nullptr),
          "cuLaunchKernel");
  }

  // launch_buffers for the manifest `k` (this kernel's, or made concrete for an M), passing
  // `m_value` to the scalar parameter "M" where it is set, and the float32 `scalars` by name.
  void launch_with(const KernelManifest& k, const std::map<std::string, CUdeviceptr>& buffers,
                   const int32_t* m_value, const std::map<std::string, float>& scalars,
                   CUstream stream) const {
    std::vector<CUdeviceptr> pointers(k.params.size());
    std::vector<float> values(k.params.size());
    std::vector<CUtensorMap> maps(k.params.size());
    std::vector<void*> args;
    auto buffer = [&](const std::string& name, const std::string& param) {
      auto it = buffers.find(name);
      if (it == buffers.end())
        throw std::runtime_error(k.name + ": no buffer named " + name + " for parameter " + param);
      return it->second;
    };
    for (size_t i = 0; i < k.params.size(); ++i) {
      const Param& p = k.params[i];
      if (p.is_tensor_map) {
        maps[i] = encode_tensor_map(p.tensor_map, buffer(p.tensor_map.buffer, p.name));
        args.push_back(&maps[i]);
      } else if (p.pointer) {
        pointers[i] = buffer(p.name, p.name);
        args.push_back(&pointers[i]);
      } else if (m_value != nullptr && p.name == "M") {
        args.push_back(const_cast<int32_t*>(m_value));
      } else if (p.type == "float32" && scalars.count(p.name) != 0) {
        values[i] = scalars.at(p.name);
        args.push_back(&values[i]);
      } else {
        throw std::runtime_error(
            k.name + ": parameter " + p.name +
            (k.m_rows > 0 ? " is the run-time M: launch it with launch_m"
                          : " is a scalar: give a float32 one in `scalars`, or launch(args)"));
      }
    }
    for (size_t i = 0; i < k.params.size(); ++i) {
      const Param& p = k.params[i];
      if (p.pointer && p.zero_init)
        check(cuMemsetD8Async(pointers[i], 0, static_cast<size_t>(p.bytes), stream),
              "cuMemsetD8Async");
    }
    launch_as(k, args.data(), stream);
  }

  KernelManifest manifest_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

// The kernels of a manifest's dispatch table, loaded in the current context: launch(m, ...)
// picks the kernel whose interval holds m and launches it for M = m.
class DispatchedGemm {
 public:
  explicit DispatchedGemm(const std::string& dir) : table_(read_dispatch(dir)) {
    const std::vector<KernelManifest> all = read_manifest(dir);
    for (const DispatchEntry& e : table_.entries) {
      auto it = std::find_if(all.begin(), all.end(),
                             [&](const KernelManifest& k) { return k.name == e.kernel; });
      if (it == all.end())
        throw std::runtime_error(dir + "/manifest.json: the dispatch table names " + e.kernel +
                                 ", which is not among its kernels");
      kernels_.emplace(e.kernel, LoadedKernel(*it, dir));
    }
  }

  const DispatchTable& table() const { return table_; }
  const LoadedKernel& kernel_for(int64_t m) const { return kernels_.at(table_.pick(m).kernel); }
  // C[m,N] = A[m,K]·B with the table's kernel for m (buffers by parameter name).
  void launch(int64_t m, const std::map<std::string, CUdeviceptr>& buffers,
              CUstream stream = nullptr) const {
    kernel_for(m).launch_m(m, buffers, stream);
  }

 private:
  DispatchTable table_;
  std::map<std::string, LoadedKernel> kernels_;
};

}  // namespace cutune_loader
